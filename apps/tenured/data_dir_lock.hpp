#pragma once
// One tenured per data dir, settled before anything in it is touched: a restore, a recovery or
// the cut of a crash's WAL tail run before the ledger is opened (and RocksDB's own LOCK taken),
// and must never run beside a daemon that serves that ledger, whatever socket it listens on.
#include <optional>
#include <string>

#include "core/unique_fd.hpp"

namespace tenure {

// An exclusive lock on `<data_dir>/tenured.lock` (flock, released when the process ends, even by
// kill -9), with this process's pid written in it for the operator. Empty, with `error` set, if
// another process holds it or the file cannot be made.
std::optional<UniqueFd> lock_data_dir(const std::string& data_dir, std::string& error);

}  // namespace tenure
