#pragma once
// The ledger's file system: the real one, with two differences.
// - "No space left" reaches RocksDB as a plain I/O error. RocksDB hands a full disk to its own
//   recovery, which waits for free space of a whole write buffer (16 MiB here) and refuses
//   DB::Resume() meanwhile, so a small disk that frees a few MiB would never resume; the group
//   writer resumes it itself (see GroupWriter).
// - WAL files are preallocated with their size (see wal_tail.hpp).
#include <memory>

namespace rocksdb {
class FileSystem;
}  // namespace rocksdb

namespace tenure::storage {

std::shared_ptr<rocksdb::FileSystem> ledger_file_system(std::shared_ptr<rocksdb::FileSystem> base);

}  // namespace tenure::storage
