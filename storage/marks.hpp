#pragma once
// The ledger's high-water marks, kept outside RocksDB in a small file of their own (replaced
// atomically: write, fsync, rename, fsync the directory), so that damage to the ledger cannot
// take them along (§6):
//   reserved  no revision above it has been used. The writer reserves revisions in blocks and
//             moves the mark before it uses the first revision of a block, so a recovery that
//             starts above it issues no revision (hence no token, see Ledger) twice.
//   durable   a revision known durable in the ledger: exact after a clean stop, at most a second
//             old after a crash. A ledger that opens below it has lost acknowledged changes.
#include <optional>
#include <string>

#include "core/lease.hpp"
#include "storage/errc.hpp"

namespace tenure::storage {

struct Marks {
  Revision reserved = 0;
  Revision durable = 0;
};

// Revisions reserved at a time: one extra fsync per this many events.
inline constexpr Revision kRevisionBlock = Revision{1} << 16;

// A missing file is ok with `marks` left empty.
Status read_marks(const std::string& path, std::optional<Marks>& marks);
Status write_marks(const std::string& path, const Marks& marks);

// A recovery or a restore of the ledger in `ledger_path` under way, kept in a file beside it
// (LEDGER.recovering) from before it changes anything until it has started above every revision
// issued. Until then the ledger may be half repaired, or a backup without the jump, and tokens
// could go back: a normal start that finds the mark refuses. `what` names the flag to run again.
Status mark_recovery(const std::string& ledger_path, const std::string& what);
// A missing mark is ok with `what` left empty.
Status read_recovery_mark(const std::string& ledger_path, std::optional<std::string>& what);
Status clear_recovery_mark(const std::string& ledger_path);

// A repair of the ledger's files (RocksDB's RepairDB) under way, kept beside it
// (LEDGER.repairing) from before it starts until the repaired ledger opened. A repair killed half
// way leaves an empty MANIFEST that an open would take for the whole ledger, deleting every table
// file as obsolete: a recovery that finds the mark repairs again, without opening first.
Status mark_repair(const std::string& ledger_path);
bool repair_marked(const std::string& ledger_path);
Status clear_repair_mark(const std::string& ledger_path);

}  // namespace tenure::storage
