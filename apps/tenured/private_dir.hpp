#pragma once
// The directories tenured keeps its ledger and socket in (§7): created 0700 (parents too) when
// missing, refused when others could write to them and so swap the files inside.
#include <sys/types.h>

#include <string>

namespace tenure {

enum class SharedDirPolicy {
  refuse,        // the data dir: must be ours and writable by nobody else
  allow_sticky,  // a socket's dir: a sticky one such as /tmp keeps others off our file
};

// False with `error` set when the directory cannot be made or is not safe.
bool make_private_dir(const std::string& path, SharedDirPolicy policy, std::string& error);

// Lets `group` reach a shared socket in `path` (§7): a directory of ours that is not sticky gets
// that group and g+x (traverse, not list, never write); any other must already let the group
// through. False with `error` set when the group cannot reach it.
bool open_dir_to_group(const std::string& path, gid_t group, std::string& error);

}  // namespace tenure
