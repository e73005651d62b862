#pragma once
// Loopback TCP ports for servers under test.
//
// A port that is merely "free a moment ago" can be taken before the server binds it: the kernel
// hands ports of the ephemeral range to outgoing connections, and other tests pick ports too.
// A ReservedPort stays bound, with SO_REUSEADDR and never listening, for as long as it lives. The
// kernel then gives the port to no outgoing connection and to no other bind, while a server that
// also sets SO_REUSEADDR (our Asio acceptors, Go's listeners in etcd) can bind and listen on it,
// and bind it again after a restart.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace tenure::test {

class ReservedPort {
 public:
  ReservedPort() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    int reuse = 1;
    bool ok = fd_ >= 0 && ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse) == 0 &&
              ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
              ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    int error = errno;
    if (!ok) {
      if (fd_ >= 0) ::close(fd_);
      throw std::runtime_error("no free loopback port: " + std::string(std::strerror(error)));
    }
    port_ = ntohs(address.sin_port);
  }
  ReservedPort(ReservedPort&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}
  ReservedPort& operator=(ReservedPort&&) = delete;
  ReservedPort(const ReservedPort&) = delete;
  ~ReservedPort() {
    if (fd_ >= 0) ::close(fd_);
  }

  unsigned short port() const { return port_; }

 private:
  int fd_;
  unsigned short port_ = 0;
};

}  // namespace tenure::test
