#pragma once
// Room on the ledger's disk for the next write, checked before RocksDB is asked to write it.
//
// A WAL append that fails for want of space leaves RocksDB 7.8 unable to write again until it is
// reopened, whatever Resume() says (facebook/rocksdb#11643: the WAL's writer keeps its error when
// the recovery finds no memtable to switch). So a write is refused before it reaches RocksDB
// while the disk has less free than a reserve: the write in hand, its flushes and the marks file
// fit in it, and a refused write resumes by itself once space returns (§6).
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "storage/errc.hpp"

namespace tenure::storage {

class DiskRoom {
 public:
  // `path`: a directory on the ledger's file system.
  explicit DiskRoom(std::string path);

  // Whether `bytes` more may be written now, keeping the reserve. The file system is asked at
  // most every few milliseconds while there is plenty of room, and before every write near the
  // reserve. Any thread.
  Status admit(std::uint64_t bytes);

  // The reserve: 1/16 of the file system, at least 256 KiB and at most 16 MiB.
  std::uint64_t reserve() const { return reserve_; }

 private:
  using Clock = std::chrono::steady_clock;
  Status measure(Clock::time_point now);

  const std::string path_;
  std::mutex mutex_;
  std::uint64_t reserve_ = 0;
  std::uint64_t free_ = 0;     // at the last measure
  std::uint64_t written_ = 0;  // admitted since then
  Clock::time_point measured_{};
};

}  // namespace tenure::storage
