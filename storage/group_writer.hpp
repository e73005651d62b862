#pragma once
// One writer thread turns the mutations of many key actors into one WriteBatch (group commit),
// and a completer thread makes them durable and answers them, in commit order. The two overlap:
// with sync on, batch N+1 is written into the WAL and the memtables while N's WAL sync runs, and
// one sync covers every batch written before it began. Revisions are assigned in commit order;
// revision() and every read see only what is durable. A failed write or sync (a full disk) makes
// the writer refuse every write (the engine answers `unavailable`) until every key actor that
// saw a refusal has dropped its unwritten state, and then until RocksDB resumes (it retries once
// a second): nothing is acknowledged that was not written, and no write builds on one that
// failed. Batches written but refused (a failed sync) are undone before writes resume.
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/lease.hpp"
#include "storage/dirty_rows.hpp"
#include "storage/disk_room.hpp"
#include "storage/errc.hpp"
#include "storage/key_order.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
class Snapshot;
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

// Called on the completer thread (the writer thread with sync off) once the ops are durable (ok,
// their events numbered) or refused (!ok), in commit order.
using CommitDone = std::function<void(bool ok, std::vector<WriteOp>& ops)>;
// Sees every committed event, in revision order, on the same thread: one call per written
// batch, once it is durable and before its CommitDone calls, with the events of each of its ops
// that has some (they are the ops', valid during the call).
using EventSink = std::function<void(const std::vector<const Events*>& events)>;

// A group commit is one WAL sync with sync on (it covers every batch written before it), one
// written batch without.
struct WriterStats {
  std::uint64_t batches = 0;  // written
  std::uint64_t groups = 0;   // submit() calls: a shard's turn each
  // Groups committed by the thread that submitted them, with nothing else in flight.
  std::uint64_t committed_here = 0;
  std::uint64_t syncs = 0;
  std::uint64_t ops = 0;
  std::uint64_t max_batch = 0;  // ops of one group commit
  // Ops per group commit in buckets 1, 2-3, 4-7, ... 2^15+.
  std::array<std::uint64_t, 17> batch_size_log2{};
  // Write(s)+sync time of a group commit in microsecond buckets 1, 2-3, 4-7, ...
  std::array<std::uint64_t, 32> write_us_log2{};
  std::uint64_t write_us_sum = 0;
  std::uint64_t failures = 0;
  // Cluster ledger: transactions sent again because another node wrote first (P/rev moved).
  std::uint64_t conflicts = 0;
  // Times the writer thread woke from a wait (not a timeout), for something or for nothing.
  std::uint64_t writer_wakeups = 0;
};

// Counts one group commit of `ops` ops that took `micros` into the stats.
void count_group(WriterStats& stats, std::uint64_t ops, std::uint64_t micros);
std::uint64_t micros_since(std::chrono::steady_clock::time_point start);

struct WriterConfig {
  bool sync = true;
  std::size_t history_keep = 1000;
  std::uint64_t events_keep = 1'000'000;
  std::string marks_path;  // see marks.hpp
  // A checkpoint writes the rows changed since the last one when this many ops or this much time
  // have passed since it (and at a clean stop).
  std::uint64_t checkpoint_ops = 65'536;
  std::chrono::milliseconds checkpoint_every{1000};
  // The longest a sync is held back for the ops its predecessor answered to come back (see
  // gather()); never longer than half that sync's time.
  std::chrono::microseconds gather_max{1000};
};

// Key of the meta row that holds the revision of the last checkpoint: the lease and tenure rows
// are complete up to it, and the journals of the events above it hold the rest.
inline constexpr const char* kCheckpointKey = "checkpoint";
// Key of the meta row that holds the oldest event kept.
inline constexpr const char* kOldestKey = "oldest_revision";

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
  // A group submitted while nothing is in flight is committed (written, synced and answered) on
  // the caller's thread, before submit() returns: `done` then runs inside it.
  void submit(std::vector<WriteOp> ops, CommitDone done);
  void refusal_settled();
  // Writes maintenance rows outside the group commit (durable on return with sync on), for
  // start-up work: they become visible to reads at once only when no batch awaits its sync.
  Status write_aside(rocksdb::WriteBatch& batch);
  void set_event_sink(EventSink sink);
  // Blocks until everything submitted before the call is committed or refused.
  void flush();
  void stop();

  bool healthy() const { return healthy_.load(); }
  // The newest durable revision.
  Revision revision() const { return revision_.load(); }
  // What reads of the lease and tenure rows must see: the ledger after the newest durable batch
  // that wrote more than events, with nothing that is not durable (null: the latest, which is
  // then durable). The rows changed since are the dirty rows (durable_view). A batch of events
  // alone takes no snapshot: the event log is read up to revision() instead, without one.
  std::shared_ptr<const rocksdb::Snapshot> durable_snapshot() const { return durable_.load(); }
  // The durable snapshot, and `look(const DirtyRows&)` called on the durable rows that no
  // checkpoint has written yet, as one consistent view: a read adds those rows to what the
  // snapshot has (they win).
  template <typename Look>
  std::shared_ptr<const rocksdb::Snapshot> durable_view(Look&& look) const {
    std::lock_guard lock(view_mutex_);
    look(dirty_);
    return durable_.load();
  }
  Revision oldest_revision() const { return oldest_revision_.load(); }
  WriterStats stats() const;
  std::string last_error() const;

 private:
  struct Pending {
    std::vector<WriteOp> ops;
    CommitDone done;
  };
  // A batch handed from the writer thread to the completer: written, or refused.
  struct Landing {
    std::vector<Pending> batch;
    bool ok = false;
    std::uint64_t ops = 0;
    std::uint64_t write_us = 0;
    Revision revision = 0;  // after the batch
    Revision oldest = 0;
    std::optional<Revision> checkpoint;  // the batch is a checkpoint at this revision
    std::string rep;                     // sync on: the batch's bytes, to undo it if its sync fails
    std::shared_ptr<const rocksdb::Snapshot> snapshot;  // sync on: the ledger after it
  };
  void run();
  // The caller commits its group as the writer would, and syncs and answers it as the completer
  // would. REQUIRES: committing_here_ (and syncing_ with sync on) set by submit().
  void commit_here(std::vector<Pending>& batch);
  // Syncs and answers a caller's written group (sync on), the writer's state given back first.
  void sync_here(Landing landing);
  // Gives the writer's state back to the writer thread (woken if it has work).
  void release_writer();
  void complete();  // the completer thread (sync on)
  // After a sync that answered `answered` ops, holds the next one back (for at most half as long
  // as that sync took) until half of those ops have come back, on top of what waited already.
  // REQUIRES: the completer thread, syncing_ set by it.
  void gather(std::uint64_t answered, std::uint64_t sync_us);
  // Publishes the events of the landed batches that were written and answers every group.
  void answer(std::vector<Landing>& landings, std::vector<const Events*>& events);
  [[nodiscard]] bool commit(std::vector<Pending>& batch);
  // Writes write_batch_ (the ops of `batch`, up to revision `next`; nothing but their events if
  // `events_alone`) and hands it on.
  [[nodiscard]] bool write_and_land(bool encoded, std::vector<Pending>& batch, std::uint64_t ops,
                                    Revision next, Revision new_oldest,
                                    std::optional<Revision> checkpoint, bool events_alone);
  // A checkpoint writes the rows changed since the last one (if any), in chunks between commits,
  // the last chunk with meta/checkpoint. REQUIRES: writer thread, healthy.
  // REQUIRES: writer thread, or mutex_ held while it is parked and no caller has its state.
  bool checkpoint_due(bool timed) const;
  void start_checkpoint();
  void checkpoint_step();  // REQUIRES: a checkpoint under way
  // Between batches, under one lock: drops a chunk of the oldest durable checkpoint's rows from
  // dirty_, and moves a chunk of a growing dirty_ to its new table. REQUIRES: writer thread.
  void tidy_dirty();
  // Adds the trim of the event log up to revision `next` to write_batch_ if it is due, never
  // above `checkpoint`; `new_oldest` is the oldest event kept then. False if it cannot.
  [[nodiscard]] bool trim_events(Revision next, Revision checkpoint, Revision& new_oldest);
  // Deletes the table files that hold only events below the durable oldest revision.
  // REQUIRES: writer thread, healthy.
  void drop_trimmed_events();
  // Records the rows and ended tenures of durable ops (the tenures moved out of them), then
  // records that a landed `checkpoint` is durable. REQUIRES: view_mutex_ held.
  void record_dirty(std::vector<Pending>& batch, Revision revision,
                    std::optional<Revision> checkpoint);
  void refuse(std::vector<Pending>& batch);
  // Moves queue_ into `batch` (empty). REQUIRES: mutex_ held, writer thread.
  void take_queue(std::vector<Pending>& batch);
  void land(Landing landing);
  // Returns how long the sync took (µs; 0 if nothing was synced).
  // REQUIRES: the completer thread, or a caller committing its group.
  std::uint64_t sync_landed(std::vector<Landing>& landings);
  std::shared_ptr<const rocksdb::Snapshot> take_snapshot();
  Status write_marks_now(Revision durable);  // REQUIRES: writer thread (or not started)
  Status reserve_for(Revision next);         // REQUIRES: writer thread
  void try_resume();                         // REQUIRES: writer thread, unhealthy
  Status undo_refused();                     // REQUIRES: writer thread, nothing in flight

  rocksdb::DB* db_;
  DiskRoom room_;  // checked before every write reaches RocksDB
  ColumnFamilies cf_;
  WriterConfig config_;
  // The snapshots' shared_ptr control blocks: with sync on, every checkpoint step and trim takes
  // a snapshot, and its block is reused rather than allocated. Declared before every holder of a
  // snapshot.
  std::pmr::synchronized_pool_resource snapshot_blocks_;
  // Reused by every commit (writer thread only): a batch of hundreds of writes is a large
  // allocation, and allocating it anew each time makes malloc consolidate its free lists.
  std::unique_ptr<rocksdb::WriteBatch> write_batch_;
  // Rows and row keys are encoded here, one after the other (the batch copies them).
  std::string scratch_key_;
  std::string scratch_value_;

  // Held around a batch's write and its snapshot, and around write_aside().
  std::mutex write_mutex_;
  // A write_aside() whose rows no snapshot has yet: the next batch takes one, whatever it writes.
  // REQUIRES: write_mutex_ held.
  bool aside_unpublished_ = false;
  // Guards dirty_ and the publication of each durable revision and snapshot with it.
  mutable std::mutex view_mutex_;
  DirtyRows dirty_;
  std::atomic<Revision> checkpoint_durable_{0};  // also read by the writer's wait, unguarded
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::vector<Pending> queue_;
  std::condition_variable landed_;
  std::vector<Landing> landing_;
  bool writer_done_ = false;
  bool syncing_ = false;  // the completer (or a caller committing its group) syncs and answers
  // The writer thread waits for work and uses none of its state (below): a caller may then take
  // that state to commit its group (committing_here_) until it gives it back.
  bool writer_parked_ = false;
  bool committing_here_ = false;
  bool writer_waits_release_ = false;  // woke while a caller had its state
  // The last answer was of one group, with nothing queued or written behind it (see submit()).
  bool lone_ = true;
  bool waits_for_dirty_ = false;  // the writer waits, without a deadline, for durable rows
  std::vector<std::vector<Pending>> spare_queues_;  // emptied, for queue_
  std::size_t queued_ops_ = 0;                      // ops in queue_
  std::uint64_t landed_ops_ = 0;                    // ops in landing_
  std::uint64_t gather_target_ = 0;                 // see gather(); 0: not gathering
  // Set by a failed sync: every batch written after it is refused too, until writes resume.
  bool sync_failed_ = false;
  std::vector<std::string> undo_;        // bytes of written batches that were refused
  std::vector<std::string> spare_reps_;  // their buffers, reused
  std::uint64_t submitted_ = 0;
  std::uint64_t finished_ = 0;
  bool stopping_ = false;
  EventSink sink_;
  WriterStats stats_;
  std::string last_error_;

  // Writer thread only (or a caller committing its group, see submit()).
  Revision reserved_ = 0;
  Revision written_ = 0;  // the newest revision written (durable or not)
  Revision written_oldest_ = 0;
  Revision events_dropped_below_ = 0;
  Revision checkpoint_written_ = 0;  // events above it are never trimmed
  struct Checkpoint {
    Revision at = 0;            // the rows are complete up to it once every key is written
    DirtyRows::KeyList listed;  // the keys changed since the last checkpoint began
    KeyOrder keys;              // into listed
  };
  std::optional<Checkpoint> checkpointing_;
  // Written checkpoints whose keys' rows are dropped from dirty_ once they are durable, a chunk
  // per turn of the writer (tidy_dirty).
  struct Dropping {
    Revision at = 0;
    DirtyRows::KeyList keys;
    std::size_t next = 0;
  };
  std::deque<Dropping> dropping_;
  DirtyRows::KeyList spare_listed_;          // a dropped checkpoint's list, reused
  std::atomic<Revision> dirty_revision_{0};  // dirty_.revision(), read without view_mutex_
  std::uint64_t ops_since_checkpoint_ = 0;
  std::chrono::steady_clock::time_point checkpointed_at_;
  std::vector<Landing> landed_here_;  // sync off: batches answered on this thread
  std::vector<const Events*> events_here_;
  // Sync on: a caller's group, synced and answered after the writer has its state back.
  // REQUIRES: committing_here_ or syncing_ set by that caller.
  std::vector<Landing> here_landings_;
  std::vector<const Events*> here_events_;
  std::chrono::steady_clock::time_point marks_written_;
  std::atomic<std::int64_t> unsettled_{0};
  std::atomic<std::int64_t> unlanded_{0};  // written batches the completer has not answered

  std::atomic<bool> healthy_{true};
  std::atomic<Revision> revision_;
  std::atomic<Revision> oldest_revision_;
  // The durable snapshot, replaced by the commit thread and copied by every read. A mutex, not
  // std::atomic<std::shared_ptr>: libstdc++ 12 locks that with a pointer bit ThreadSanitizer
  // cannot see, and the copy under the lock is short either way.
  class SnapshotSlot {
   public:
    std::shared_ptr<const rocksdb::Snapshot> load() const {
      std::lock_guard lock(mutex_);
      return snapshot_;
    }
    void store(std::shared_ptr<const rocksdb::Snapshot> snapshot) {
      std::lock_guard lock(mutex_);
      snapshot_.swap(snapshot);  // the old one is released after the lock (when `snapshot` goes)
    }

   private:
    mutable std::mutex mutex_;
    std::shared_ptr<const rocksdb::Snapshot> snapshot_;
  };
  SnapshotSlot durable_;
  std::thread completer_;
  std::thread thread_;
};

}  // namespace tenure::storage
