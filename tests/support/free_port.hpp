#pragma once
// A loopback TCP port that was free a moment ago (the server under test binds it right after; a
// clash fails loudly there).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tenure::test {

inline unsigned short free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error("no free loopback port: " + std::string(std::strerror(error)));
  return ntohs(address.sin_port);
}

}  // namespace tenure::test
