#include "transports/socket_path.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tenure {
namespace {

// The errno of connecting to the socket at `path`, or 0 when something accepted.
int probe(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  int result = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  int error = result == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

}  // namespace

bool claim_socket_path(const std::string& path, std::string& error) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    error = "socket path " + path + " is longer than " +
            std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
    return false;
  }
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return true;  // nothing there
  if (!S_ISSOCK(info.st_mode)) {
    error = path + " exists and is not a socket; refusing to replace it";
    return false;
  }
  int refused = probe(path);
  if (refused == 0) {
    error = "another tenured is already listening on " + path;
    return false;
  }
  if (refused != ECONNREFUSED) {
    error = "cannot tell whether a daemon owns " + path + ": " + std::strerror(refused);
    return false;
  }
  // Nobody listens: a crashed daemon's leftover.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    error = "cannot remove the stale socket " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace tenure
