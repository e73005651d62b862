#pragma once
// Who is on the other end of a Unix socket (§7): the peer's uid from SO_PEERCRED is its
// principal; root and the server's own uid are admins.
#include <optional>

#include "core/lease.hpp"

namespace tenure {

struct Peer {
  Principal uid = 0;
  bool admin = false;
};

// Empty when the kernel cannot tell (the socket is already gone).
std::optional<Peer> peer_of(int socket_fd);

}  // namespace tenure
