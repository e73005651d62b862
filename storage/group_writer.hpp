#pragma once
// One writer thread turns the mutations of many key actors into one WriteBatch and one WAL sync
// (group commit). Revisions are assigned in commit order. A failed write (a full disk) makes the
// writer refuse every write (the engine answers `unavailable`) until every key actor that saw a
// refusal has dropped its unwritten state, and then until RocksDB resumes (it retries once a
// second): nothing is acknowledged that was not written, and no write builds on one that failed.
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/lease.hpp"
#include "storage/errc.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace tenure::storage {

struct ColumnFamilies {
  rocksdb::ColumnFamilyHandle* leases = nullptr;
  rocksdb::ColumnFamilyHandle* tenures = nullptr;
  rocksdb::ColumnFamilyHandle* events = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
};

// One key's durable change.
struct WriteOp {
  std::string key;
  // The key's lease row (encode_state) to put, if it changed: encoded by its shard, so that the
  // one writer thread only copies it.
  std::optional<std::string> row;
  TenureRecords tenures;
  Events events;  // revisions are filled in at commit
};

// Called on the writer thread once the ops are durable (ok, their events numbered) or refused
// (!ok), in commit order.
using CommitDone = std::function<void(bool ok, std::vector<WriteOp>& ops)>;
// Sees every committed event, in revision order, on the writer thread: one call per commit, with
// the events of each of its ops that has some (they are the ops', valid during the call).
using EventSink = std::function<void(const std::vector<const Events*>& events)>;

struct WriterStats {
  std::uint64_t batches = 0;
  std::uint64_t groups = 0;  // submit() calls: a shard's turn each
  std::uint64_t syncs = 0;
  std::uint64_t ops = 0;
  std::uint64_t max_batch = 0;
  // Batch sizes in buckets 1, 2-3, 4-7, ... 2^15+.
  std::array<std::uint64_t, 17> batch_size_log2{};
  // Write+sync latency in microsecond buckets 1, 2-3, 4-7, ...
  std::array<std::uint64_t, 32> write_us_log2{};
  std::uint64_t write_us_sum = 0;
  std::uint64_t failures = 0;
};

struct WriterConfig {
  bool sync = true;
  std::size_t history_keep = 1000;
  std::uint64_t events_keep = 1'000'000;
  std::string marks_path;  // see marks.hpp
};

class GroupWriter {
 public:
  GroupWriter(rocksdb::DB* db, ColumnFamilies cf, WriterConfig config, Revision revision,
              Revision oldest_revision);
  ~GroupWriter();  // drains what was submitted, then stops

  // Reserves revisions above `reserved` if needed (see marks.hpp) and starts the thread.
  Status start(Revision reserved);
  // Submits the changes of one turn of a shard, many keys at once, answered once. `done(false)`
  // means no op was written; the caller must call `refusal_settled()` once per op, when it has
  // dropped the state that op was computed on. Writes resume only after that.
  void submit(std::vector<WriteOp> ops, CommitDone done);
  void refusal_settled();
  void set_event_sink(EventSink sink);
  // Blocks until everything submitted before the call is committed or refused.
  void flush();
  void stop();

  bool healthy() const { return healthy_.load(); }
  Revision revision() const { return revision_.load(); }
  Revision oldest_revision() const { return oldest_revision_.load(); }
  WriterStats stats() const;
  std::string last_error() const;

 private:
  struct Pending {
    std::vector<WriteOp> ops;
    CommitDone done;
  };
  void run();
  [[nodiscard]] bool commit(std::vector<Pending>& batch);
  void refuse(std::vector<Pending>& batch);
  Status write_marks_now(Revision durable);  // REQUIRES: writer thread (or not started)
  Status reserve_for(Revision next);         // REQUIRES: writer thread
  void try_resume();                         // REQUIRES: writer thread, unhealthy

  rocksdb::DB* db_;
  ColumnFamilies cf_;
  WriterConfig config_;
  // Reused by every commit (writer thread only): a batch of hundreds of writes is a large
  // allocation, and allocating it anew each time makes malloc consolidate its free lists.
  std::unique_ptr<rocksdb::WriteBatch> write_batch_;
  // Rows and row keys are encoded here, one after the other (the batch copies them).
  std::string scratch_key_;
  std::string scratch_value_;
  std::vector<const Events*> scratch_events_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::vector<Pending> queue_;
  std::uint64_t submitted_ = 0;
  std::uint64_t finished_ = 0;
  bool stopping_ = false;
  EventSink sink_;
  WriterStats stats_;
  std::string last_error_;

  // Writer thread only.
  Revision reserved_ = 0;
  std::chrono::steady_clock::time_point marks_written_;
  std::atomic<std::int64_t> unsettled_{0};

  std::atomic<bool> healthy_{true};
  std::atomic<Revision> revision_;
  std::atomic<Revision> oldest_revision_;
  std::thread thread_;
};

}  // namespace tenure::storage
