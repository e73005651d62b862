#include "apps/tenure/client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "apps/tenure/failure.hpp"
#include "core/duration.hpp"

namespace tenure::cli {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// The common causes in words a user can act on; strerror for the rest.
std::string connect_problem(const std::string& path, int err) {
  struct stat st {};
  // connect() to a file that is not a socket says only "connection refused".
  if ((err == ECONNREFUSED || err == ENOTSOCK) && ::stat(path.c_str(), &st) == 0 &&
      !S_ISSOCK(st.st_mode)) {
    return S_ISDIR(st.st_mode) ? "it is a directory, not a socket" : "it is not a socket";
  }
  switch (err) {
    case ENOENT:
      return "no such file; is tenured running?";
    case ECONNREFUSED:
      return "connection refused; is tenured running?";
    case EACCES:
    case EPERM:
      return "permission denied; the socket belongs to another user";
    default:
      return std::strerror(err);
  }
}

int remaining_ms(SteadyTime deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
}

}  // namespace

Client::Client(const SocketChoice& socket, Millis reply_timeout)
    : path_(socket.path), reply_timeout_(reply_timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) {
    throw CliError("cannot connect to " + path_ + ": the path is longer than " +
                   std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  // CLOEXEC: a command started by `run` must not keep the connection (and so the lease) alive.
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw CliError(std::string("cannot create a socket: ") + std::strerror(errno));
  int rc;
  do {
    rc = ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    ::close(fd_);
    std::string also =
        socket.also_looked_for ? " (also looked for " + *socket.also_looked_for + ")" : "";
    throw CliError("cannot connect to " + path_ + ": " + connect_problem(path_, err) + also);
  }
}

Client::~Client() { ::close(fd_); }

void Client::write_line(std::string line) {
  line.push_back('\n');
  std::size_t sent = 0;
  while (sent < line.size()) {
    // MSG_NOSIGNAL: a daemon that went away is an error to report, not a SIGPIPE death.
    ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw ConnectionClosed("lost the connection to tenured at " + path_ + ": " +
                             std::strerror(errno));
    }
    sent += static_cast<std::size_t>(n);
  }
}

std::optional<Message> Client::last_words() {
  try {
    while (auto message = receive(0)) {
      if (message->status() == "error") return message;
    }
  } catch (const ConnectionClosed&) {
    // Read to the end: nothing (more) was said.
  }
  return std::nullopt;
}

std::optional<std::string> Client::take_line() {
  for (;;) {
    auto end = inbox_.find('\n');
    if (end == std::string::npos) return std::nullopt;
    std::string line = inbox_.substr(0, end);
    inbox_.erase(0, end + 1);
    if (!line.empty()) return line;
  }
}

std::optional<Message> Client::receive(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (auto line = take_line()) return Message(std::move(*line));
    pollfd pfd{fd_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, timeout_ms < 0 ? -1 : remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw CliError(std::string("poll: ") + std::strerror(errno));
    if (ready == 0) return std::nullopt;
    char buf[65536];
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw ConnectionClosed("lost the connection to tenured at " + path_ + ": " +
                             std::strerror(errno));
    }
    if (n == 0) throw ConnectionClosed("tenured closed the connection");
    inbox_.append(buf, static_cast<std::size_t>(n));
  }
}

Message Client::await_reply(RequestId id, std::optional<Millis> timeout) {
  Millis limit = timeout.value_or(reply_timeout_);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit);
  for (;;) {
    auto message = receive(remaining_ms(deadline));
    if (!message) {
      throw CliError("no reply from tenured at " + path_ + " within " + format_duration(limit));
    }
    if (message->id() == id) return std::move(*message);
    // Every request we send has an id, so an error without one is about the connection itself
    // (an oversized line, too many connections): ours to report.
    if (!message->id() && message->status() == "error") return std::move(*message);
  }
}

}  // namespace tenure::cli
