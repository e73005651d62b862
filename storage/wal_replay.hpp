#pragma once
// A repair (RocksDB's RepairDB) rebuilds the MANIFEST from the table files alone. It cannot tell
// a WAL record's column family without the MANIFEST it lost, so it drops every record of ours
// (they are all outside the default family) and moves the WALs to lost/: every change not yet
// flushed into a table file would be gone. So a recovery moves the WALs aside before it repairs,
// and writes their records again after it.
#include <rocksdb/db.h>

#include <cstdint>
#include <string>
#include <vector>

#include "storage/errc.hpp"

namespace tenure::storage {

// Moves every WAL of the ledger at `ledger_path` into its `wal-replay/` directory, durably, after
// any set aside before, in order.
Status set_aside_wals(const std::string& ledger_path);

struct WalReplay {
  std::uint64_t batches = 0;   // write batches written again
  std::uint64_t damaged = 0;   // fragments or batches that could not be read, skipped
  std::uint64_t unplaced = 0;  // changes to a column family the ledger does not have
};

// Writes every write batch of the set-aside WALs again, oldest first, each change into the
// family whose original id is its index in `by_id` (a ledger's families were all made by its
// first open, in order, so their ids are their places in it), then removes them once that is
// durable. Nothing when none are set aside. Writing them twice (a recovery killed half way and
// run again) ends in the same rows: they are the newest changes, in order.
// REQUIRES: nothing else writes yet.
Status replay_set_aside_wals(rocksdb::DB* db,
                             const std::vector<rocksdb::ColumnFamilyHandle*>& by_id,
                             const std::string& ledger_path, WalReplay& replay);

}  // namespace tenure::storage
