#include "tests/e2e/as_user.hpp"

#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "tests/e2e/line_client.hpp"

namespace e2e {
namespace {

// Reads fd to EOF, bounded by timeout.
std::string read_all(int fd, Millis timeout) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace

AsUserResult call_as(const Identity& who, const std::string& socket,
                     const std::vector<std::string>& requests) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
  pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    ::close(out[0]);
    std::string text;
    try {
      if (::setgroups(who.groups.size(), who.groups.data()) != 0 || ::setgid(who.gid) != 0 ||
          ::setuid(who.uid) != 0) {
        throw std::runtime_error("cannot become uid " + std::to_string(who.uid));
      }
      LineClient client(socket);
      for (const auto& r : requests) text += client.call(r).source() + "\n";
    } catch (const std::exception& e) {
      text += std::string("ERROR ") + e.what() + "\n";
    }
    (void)!::write(out[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(out[1]);
  AsUserResult result;
  result.text = read_all(out[0], Millis(30000));
  ::close(out[0]);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::size_t start = 0;
  for (;;) {
    auto nl = result.text.find('\n', start);
    if (nl == std::string::npos) break;
    if (auto j = Json::parse(result.text.substr(start, nl - start))) result.replies.push_back(*j);
    start = nl + 1;
  }
  return result;
}

}  // namespace e2e
