#pragma once
// The ledger's WAL files are preallocated with their size (see ledger_fs.cpp): a sync of a
// write inside the file's size does not have to commit a new size to the file system's journal,
// which made each WAL sync ~1.5x slower (docs/benchmarks.md). RocksDB's close cuts the unused
// space; a crash leaves it, as zeros, after the last record. A record the crash cut short is then
// followed by zeros instead of the end of the file, and RocksDB (kTolerateCorruptedTailRecords)
// would take it for damage. Before the ledger opens, each WAL's tail is cut back to where a
// crash of an unpreallocated file would have ended it: after its last whole record, without
// the zeros and without a record that they cut short. Nothing a sync made durable is cut: a
// sync covers every byte before the last one it wrote. A WAL that ends inside a record, at a size
// no fallocate set, was cut by something else: it is named (`cut_off`), for the open to refuse.
#include <cstdint>
#include <string>

#include "storage/errc.hpp"

namespace tenure::storage {

struct WalTail {
  std::uint64_t size = 0;     // the file's size
  std::uint64_t records = 0;  // where its whole, intact records end
  std::uint64_t written = 0;  // where its last byte that is not zero ends
  // Where a crash's tail begins, if the file has one to cut: `records`, when the file ends in
  // zeros and nothing but them and a record torn by the crash follow the records. Equal to
  // `size` when there is nothing to cut, including when something else is wrong (damage is left
  // for the open to report).
  std::uint64_t cut_at = 0;
  // Its last record runs past the end of the file, and the file's size is one that neither a
  // crash nor a clean close leaves (see scan): it was cut off by something else, damage.
  bool cut_off = false;
};

// Reads the WAL at `path` (RocksDB's log format: 32 KiB blocks of checksummed records).
Status scan_wal_tail(const std::string& path, WalTail& tail);

// Cuts every WAL in the ledger directory `dir` back to its `cut_at`, and syncs what it cut.
// `bytes_cut` counts what went. `cut_off`, if given, names the first WAL found cut off (left as
// it is, for the caller to judge), or is left empty.
Status cut_wal_tails(const std::string& dir, std::uint64_t& bytes_cut,
                     std::string* cut_off = nullptr);

}  // namespace tenure::storage
