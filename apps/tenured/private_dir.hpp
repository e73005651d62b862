#pragma once
// The directories tenured keeps its ledger and socket in (§7): created 0700 (parents too) when
// missing, refused when others could write to them and so swap the files inside.
#include <string>

namespace tenure {

enum class SharedDirPolicy {
  refuse,        // the data dir: must be ours and writable by nobody else
  allow_sticky,  // a socket's dir: a sticky one such as /tmp keeps others off our file
};

// False with `error` set when the directory cannot be made or is not safe.
bool make_private_dir(const std::string& path, SharedDirPolicy policy, std::string& error);

}  // namespace tenure
