#pragma once
// Who is on the other end of a Unix socket (§7): the peer's uid from SO_PEERCRED is its
// principal; root, the server's own uid and members of the admin group (if any) are admins.
#include <sys/types.h>

#include <optional>

#include "core/lease.hpp"

namespace tenure {

struct Peer {
  Principal uid = 0;
  bool admin = false;
  pid_t pid = 0;  // the connecting process, for the audit log
};

// Empty when the kernel cannot tell (the socket is already gone). Membership of `admin_group` is
// the peer's group (SO_PEERCRED) or the groups the system lists for its uid (getgrouplist),
// looked up at each connection so that a change applies to the next one.
std::optional<Peer> peer_of(int socket_fd, std::optional<gid_t> admin_group);

// Whether `uid`, whose process runs with group `gid`, belongs to `group`.
bool in_group(uid_t uid, gid_t gid, gid_t group);

}  // namespace tenure
