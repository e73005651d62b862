#pragma once
// A recovery's second source for lease rows (§6): every event keeps its op's journal (the lease
// row it left), so a key whose row a damaged table file took is rebuilt from its newest
// surviving journal.
#include <cstdint>

#include "storage/errc.hpp"
#include "storage/group_writer.hpp"

namespace tenure::storage {

// Writes, for each key with events, the row of its newest readable journal where the lease
// column family has no row for it, an undecodable one, or one with a lower last token (an older
// table file survived a newer one). Lost later events may have ended that tenure: a rebuilt lease
// then holds the key until its deadline (or a revoke), which fencing makes safe, where a lost one
// would let a second holder in unannounced. `rebuilt` counts the rows written.
// REQUIRES: nothing else writes yet.
Status rebuild_lost_rows(rocksdb::DB* db, const ColumnFamilies& cf, std::uint64_t& rebuilt);

}  // namespace tenure::storage
