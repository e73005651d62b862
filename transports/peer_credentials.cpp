#include "transports/peer_credentials.hpp"

#include <sys/socket.h>
#include <unistd.h>

namespace tenure {

std::optional<Peer> peer_of(int socket_fd) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return std::nullopt;
  }
  return Peer{credentials.uid, credentials.uid == 0 || credentials.uid == geteuid()};
}

}  // namespace tenure
