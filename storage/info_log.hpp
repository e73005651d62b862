#pragma once
// RocksDB's info log, sent to tenured's own log instead of a LOG file in the ledger: RocksDB's
// file logger aborts (Debian keeps its assertions) on the first line after a write to a full
// disk failed, and the ledger's disk is the one that fills.
#include <memory>

namespace rocksdb {
class Logger;
}  // namespace rocksdb

namespace tenure::storage {

std::shared_ptr<rocksdb::Logger> make_info_log();

}  // namespace tenure::storage
