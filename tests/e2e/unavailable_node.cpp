#include "tests/e2e/unavailable_node.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <stdexcept>

#include "tests/e2e/json.hpp"

namespace e2e {
namespace {

constexpr int kPollMs = 20;  // how soon the destructor is heeded

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, kPollMs) == 1;
}

}  // namespace

UnavailableNode::UnavailableNode(std::string path) : path_(std::move(path)) {
  listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  path_.copy(address.sun_path, sizeof address.sun_path - 1);
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) ||
      ::listen(listener_, 16)) {
    if (listener_ >= 0) ::close(listener_);
    throw std::runtime_error("cannot listen on " + path_);
  }
  thread_ = std::thread([this] { serve(); });
}

UnavailableNode::~UnavailableNode() {
  stop_ = true;
  thread_.join();
  ::close(listener_);
  ::unlink(path_.c_str());
}

void UnavailableNode::serve() {
  // One connection at a time: each tenure command opens one and closes it when it moves on.
  while (!stop_) {
    if (!readable(listener_)) continue;
    int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    answer(connection);
    ::close(connection);
  }
}

void UnavailableNode::answer(int connection) {
  std::string inbox;
  while (!stop_) {
    if (!readable(connection)) continue;
    char buffer[4096];
    ssize_t n = ::read(connection, buffer, sizeof buffer);
    if (n <= 0) return;
    inbox.append(buffer, static_cast<std::size_t>(n));
    for (std::size_t end; (end = inbox.find('\n')) != std::string::npos; inbox.erase(0, end + 1)) {
      auto request = Json::parse(std::string_view(inbox).substr(0, end));
      std::string id = request && (*request)["id"].is_integer()
                           ? "\"id\":" + std::to_string((*request)["id"].u64()) + ","
                           : "";
      std::string reply = "{" + id +
                          "\"status\":\"error\",\"error\":\"unavailable\",\"message\":\"the key "
                          "moved to another node; retry\"}\n";
      ++requests_;
      if (::send(connection, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) return;
    }
  }
}

}  // namespace e2e
