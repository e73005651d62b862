#include "transports/peer_credentials.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace tenure {

bool in_group(uid_t uid, gid_t gid, gid_t group) {
  if (gid == group) return true;
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || !found) {
    return false;  // a uid without a name has no supplementary groups to look up
  }
  std::vector<gid_t> groups(64);
  for (;;) {
    int count = static_cast<int>(groups.size());
    if (::getgrouplist(found->pw_name, found->pw_gid, groups.data(), &count) >= 0) {
      groups.resize(static_cast<std::size_t>(count));
      return std::find(groups.begin(), groups.end(), group) != groups.end();
    }
    // Too small: `count` now says how many there are.
    if (static_cast<std::size_t>(count) <= groups.size()) return false;
    groups.resize(static_cast<std::size_t>(count));
  }
}

std::optional<Peer> peer_of(int socket_fd, std::optional<gid_t> admin_group) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return std::nullopt;
  }
  bool admin = credentials.uid == 0 || credentials.uid == geteuid() ||
               (admin_group && in_group(credentials.uid, credentials.gid, *admin_group));
  return Peer{credentials.uid, admin, credentials.pid};
}

}  // namespace tenure
