#include "storage/group_writer.hpp"

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <chrono>

#include "core/thread_name.hpp"
#include "storage/codec.hpp"
#include "storage/marks.hpp"

namespace tenure::storage {
namespace {

std::size_t log2_bucket(std::uint64_t v, std::size_t buckets) {
  std::size_t b = v == 0 ? 0 : static_cast<std::size_t>(std::bit_width(v)) - 1;
  return b < buckets ? b : buckets - 1;
}

}  // namespace

void count_group(WriterStats& stats, std::uint64_t ops, std::uint64_t micros) {
  if (ops > stats.max_batch) stats.max_batch = ops;
  stats.batch_size_log2[log2_bucket(ops, stats.batch_size_log2.size())]++;
  stats.write_us_log2[log2_bucket(micros, stats.write_us_log2.size())]++;
  stats.write_us_sum += micros;
}

std::uint64_t micros_since(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count());
}

namespace {

// Builds the batch that puts back what a written batch changed, as a snapshot has it.
class Restorer : public rocksdb::WriteBatch::Handler {
 public:
  Restorer(rocksdb::DB* db, const ColumnFamilies& cf, const rocksdb::Snapshot* snapshot,
           rocksdb::WriteBatch& out)
      : db_(db), out_(out) {
    read_.snapshot = snapshot;
    for (rocksdb::ColumnFamilyHandle* h : {cf.leases, cf.tenures, cf.events, cf.meta}) {
      handles_.push_back(h);
    }
  }
  rocksdb::Status PutCF(std::uint32_t id, const rocksdb::Slice& key,
                        const rocksdb::Slice&) override {
    return restore(id, key);
  }
  rocksdb::Status DeleteCF(std::uint32_t id, const rocksdb::Slice& key) override {
    return restore(id, key);
  }
  rocksdb::Status DeleteRangeCF(std::uint32_t id, const rocksdb::Slice& begin,
                                const rocksdb::Slice& end) override {
    rocksdb::ColumnFamilyHandle* h = handle(id);
    if (!h) return rocksdb::Status::Corruption("unknown column family in a batch");
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_, h));
    for (it->Seek(begin); it->Valid() && it->key().compare(end) < 0; it->Next()) {
      if (rocksdb::Status s = out_.Put(h, it->key(), it->value()); !s.ok()) return s;
    }
    return it->status();
  }

 private:
  rocksdb::ColumnFamilyHandle* handle(std::uint32_t id) const {
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      if (h->GetID() == id) return h;
    }
    return nullptr;
  }
  rocksdb::Status restore(std::uint32_t id, const rocksdb::Slice& key) {
    rocksdb::ColumnFamilyHandle* h = handle(id);
    if (!h) return rocksdb::Status::Corruption("unknown column family in a batch");
    std::string value;
    rocksdb::Status s = db_->Get(read_, h, key, &value);
    if (s.IsNotFound()) return out_.Delete(h, key);
    return s.ok() ? out_.Put(h, key, value) : s;
  }

  rocksdb::DB* db_;
  rocksdb::WriteBatch& out_;
  rocksdb::ReadOptions read_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

// Ops queued during a sync above which the writer writes them without waiting for it to end.
constexpr std::size_t kWriteAhead = 64;

// Vectors of answered batches kept for the writer's queue: one per batch in flight is enough.
constexpr std::size_t kSpareQueues = 4;

// Rows per checkpoint batch: a checkpoint of many keys goes in steps after the commits, which
// would otherwise wait for it. In an expiry storm a step of 1,024 keys took 0.5-8 ms on 2 busy
// cores and held that long every op queued behind it.
constexpr std::size_t kCheckpointChunk = 256;
// Keys per step of forgetting a durable checkpoint's rows (a hash lookup each, ~0.1 µs).
constexpr std::size_t kDropChunk = 4096;
// Keys of a growing dirty-key table moved per turn of the writer: about a millisecond, and more
// per second than an expiry storm dirties.
constexpr std::size_t kMoveChunk = 1024;

// The oldest kept event moves in steps, not on every batch: each step is a meta row.
constexpr std::uint64_t kEventTrimStep = 4096;
// Trimmed events leave the disk a table file at a time (drop_trimmed_events), looked for when
// the oldest kept event has moved this far, about a flush's worth: the MANIFEST write that drops
// them stays rare. A short log is looked at on every move.
constexpr std::uint64_t kEventDropStep = 65'536;

}  // namespace

GroupWriter::GroupWriter(rocksdb::DB* db, ColumnFamilies cf, WriterConfig config, Revision revision,
                         Revision oldest_revision)
    : db_(db),
      room_(db->GetName()),
      cf_(cf),
      config_(std::move(config)),
      write_batch_(std::make_unique<rocksdb::WriteBatch>()),
      revision_(revision),
      oldest_revision_(oldest_revision) {
  dirty_.set_revision(revision);
  dirty_revision_.store(revision);
}

GroupWriter::~GroupWriter() { stop(); }

Status GroupWriter::start(Revision reserved) {
  reserved_ = reserved;
  written_ = revision_.load();
  written_oldest_ = oldest_revision_.load();
  checkpoint_written_ = written_;  // the ledger opens with every row written (Ledger::open)
  checkpoint_durable_ = written_;
  checkpointed_at_ = std::chrono::steady_clock::now();
  Status status = reserve_for(written_ + 1);
  if (!status.ok()) return status;
  if (config_.sync) durable_.store(take_snapshot());
  if (config_.sync) {
    completer_ = std::thread([this] {
      name_this_thread("ledger-sync");
      complete();
    });
  }
  // Until the thread waits for work, the first caller may commit its group itself.
  writer_parked_ = true;
  thread_ = std::thread([this] {
    name_this_thread("ledger-write");
    run();
  });
  return status;
}

void GroupWriter::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      if (!thread_.joinable()) return;
    }
    stopping_ = true;
  }
  wake_.notify_all();
  if (!thread_.joinable()) return;
  thread_.join();
  {
    std::lock_guard lock(mutex_);
    writer_done_ = true;
  }
  landed_.notify_all();
  if (completer_.joinable()) completer_.join();
  durable_.store(nullptr);  // the ledger closes next: no snapshot may outlive it
  // A clean stop: the exact revision is durable. (Unsynced writes are synced first.)
  if (healthy_.load() && (config_.sync || db_->SyncWAL().ok())) {
    (void)write_marks_now(revision_.load());  // a later start then checks less, no more
  }
}

void GroupWriter::set_event_sink(EventSink sink) {
  std::lock_guard lock(mutex_);
  sink_ = std::move(sink);
}

void GroupWriter::submit(std::vector<WriteOp> ops, CommitDone done) {
  {
    std::unique_lock lock(mutex_);
    // Answers go in submit order: a group refused while earlier ones are still unanswered is
    // refused behind them, by the writer (as in EtcdLedger::submit).
    bool healthy = healthy_.load();
    if (!stopping_ && (healthy || submitted_ > finished_)) {
      ++submitted_;
      ++stats_.groups;
      // Nothing in flight and the writer parked: handing the group to it, from it to the
      // completer and back would cost three thread wake-ups, most of a lone request's latency
      // besides the disk's. The caller commits it, as the writer and the completer would.
      // Only while the load is that light (lone_): under more, a caller blocked in a sync would
      // hold back its thread's other requests from the next one. A checkpoint that is due goes
      // first, on the writer, as it would before any batch the writer takes: lone commits one
      // after another never put it off. (The writer's state may be read here: parked, it does
      // not change it, and nobody else has it.)
      if (healthy && lone_ && writer_parked_ && !committing_here_ && queue_.empty() &&
          landing_.empty() && !syncing_ && !checkpoint_due(true)) {
        committing_here_ = true;
        syncing_ = config_.sync;  // the completer syncs nothing before this group is answered
        ++stats_.committed_here;
        // Room from an answered batch (answer()), not from the heap.
        std::vector<Pending> batch;
        if (!spare_queues_.empty()) {
          batch.swap(spare_queues_.back());
          spare_queues_.pop_back();
        }
        lock.unlock();
        batch.push_back(Pending{std::move(ops), std::move(done)});
        commit_here(batch);
        return;
      }
      queued_ops_ += ops.size();
      queue_.push_back(Pending{std::move(ops), std::move(done)});
      // During a sync the writer waits for it to end (complete() wakes it) unless this many
      // ops are queued.
      if (!syncing_ || queued_ops_ >= kWriteAhead) wake_.notify_one();
      if (gather_target_ != 0 && queued_ops_ + landed_ops_ >= gather_target_) {
        landed_.notify_one();
      }
      return;
    }
  }
  unsettled_.fetch_add(static_cast<std::int64_t>(ops.size()));
  done(false, ops);
}

void GroupWriter::refusal_settled() { unsettled_.fetch_sub(1); }

void GroupWriter::commit_here(std::vector<Pending>& batch) {
  // Once the batch has landed, the writer's state may be the writer's or another caller's again:
  // nothing of it is touched after commit().
  if (!commit(batch)) {
    spdlog::error("the ledger refused a write, refusing writes until it resumes: {}", last_error());
  }
}

void GroupWriter::sync_here(Landing landing) {
  // The writer may write the next batches while this one syncs: syncing_ holds their syncs and
  // answers back until this one is answered.
  here_landings_.push_back(std::move(landing));
  release_writer();
  sync_landed(here_landings_);
  answer(here_landings_, here_events_);
  bool queued, landed;
  {
    std::lock_guard lock(mutex_);
    syncing_ = false;
    queued = !queue_.empty();
    landed = !landing_.empty() || writer_done_;
  }
  // The completer waits for what the writer landed meanwhile (or for its stop).
  if (landed) landed_.notify_one();
  if (queued) wake_.notify_one();
}

void GroupWriter::release_writer() {
  // Read while this thread still has the writer's state.
  bool checkpoint = healthy_.load() && checkpoint_due(false);
  bool dirty = dirty_revision_.load() > checkpoint_written_;
  bool wake;
  {
    std::lock_guard lock(mutex_);
    committing_here_ = false;
    // A writer that woke meanwhile waits for this; one waiting for durable rows (written here
    // with sync off) must set its checkpoint's deadline.
    wake = !queue_.empty() || stopping_ || checkpoint || !healthy_.load() ||
           writer_waits_release_ || (waits_for_dirty_ && dirty);
  }
  if (wake) wake_.notify_one();
}

void GroupWriter::flush() {
  std::unique_lock lock(mutex_);
  std::uint64_t target = submitted_;
  drained_.wait(lock, [&] { return finished_ >= target || !thread_.joinable(); });
}

WriterStats GroupWriter::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string GroupWriter::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

std::shared_ptr<const rocksdb::Snapshot> GroupWriter::take_snapshot() {
  return {db_->GetSnapshot(), [db = db_](const rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); },
          std::pmr::polymorphic_allocator<std::byte>(&snapshot_blocks_)};
}

Status GroupWriter::write_marks_now(Revision durable) {
  marks_written_ = std::chrono::steady_clock::now();
  return write_marks(config_.marks_path, Marks{reserved_, durable});
}

Status GroupWriter::reserve_for(Revision next) {
  constexpr auto kDurableMarkEvery = std::chrono::seconds(1);
  if (next <= reserved_) {
    // Refreshes the durable mark now and then, so that a crash loses at most a second of it.
    if (std::chrono::steady_clock::now() - marks_written_ < kDurableMarkEvery) return {};
    Revision durable = revision_.load();
    if (!config_.sync) {
      if (Status s = Status::from(db_->SyncWAL()); !s.ok()) return s;
    }
    return write_marks_now(durable);
  }
  Revision old = reserved_;
  reserved_ = next + kRevisionBlock;
  Status status = write_marks_now(revision_.load());
  if (!status.ok()) reserved_ = old;
  return status;
}

Status GroupWriter::write_aside(rocksdb::WriteBatch& batch) {
  std::lock_guard lock(write_mutex_);
  rocksdb::WriteOptions wo;
  wo.sync = config_.sync;
  rocksdb::Status s = db_->Write(wo, &batch);
  // Visible now if nothing written is waiting for its sync; else with the sync of the next batch.
  if (s.ok() && config_.sync) {
    if (unlanded_.load() == 0) {
      durable_.store(take_snapshot());
    } else {
      aside_unpublished_ = true;
    }
  }
  return Status::from(s);
}

void GroupWriter::refuse(std::vector<Pending>& batch) {
  // Counted here, not when the completer answers: try_resume() must not see zero while a
  // refusal is on its way.
  for (Pending& p : batch) unsettled_.fetch_add(static_cast<std::int64_t>(p.ops.size()));
  Landing landing;
  landing.batch = std::move(batch);
  batch.clear();
  land(std::move(landing));
}

void GroupWriter::land(Landing landing) {
  // committing_here_ is set only while this thread has the writer's state, committing a caller's
  // group (submit()).
  if (!config_.sync) {
    // Nothing to wait for: answered here, without a hand-off to the completer (a caller's group
    // before the writer may write and answer a later batch).
    landed_here_.push_back(std::move(landing));
    answer(landed_here_, events_here_);
    if (committing_here_) release_writer();
    return;
  }
  if (committing_here_) {
    sync_here(std::move(landing));
    return;
  }
  {
    std::lock_guard lock(mutex_);
    landed_ops_ += landing.ops;
    landing_.push_back(std::move(landing));
  }
  landed_.notify_one();
}

Status GroupWriter::undo_refused() {
  std::vector<std::string> undo;
  {
    std::lock_guard lock(mutex_);
    undo.swap(undo_);
  }
  if (undo.empty()) return {};
  // The durable snapshot is still the one from before the failed sync. It has every row and
  // meta row as durable (only batches of events alone take none), and none of the refused
  // batches' events, which are above the durable revision.
  std::shared_ptr<const rocksdb::Snapshot> snapshot = durable_.load();
  rocksdb::WriteBatch restore;
  Restorer restorer(db_, cf_, snapshot.get(), restore);
  rocksdb::Status s;
  for (const std::string& rep : undo) {
    if (s.ok()) s = rocksdb::WriteBatch(rep).Iterate(&restorer);
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  if (s.ok()) s = db_->Write(wo, &restore);
  if (!s.ok()) {
    std::lock_guard lock(mutex_);
    undo_.insert(undo_.begin(), std::make_move_iterator(undo.begin()),
                 std::make_move_iterator(undo.end()));
  }
  return Status::from(s);
}

void GroupWriter::try_resume() {
  // Every actor that was refused has reloaded its key, so nothing builds on a failed write; and
  // every written batch has been answered, so the undo below is complete.
  if (unsettled_.load() != 0 || unlanded_.load() != 0) return;
  // Not before there is room again: RocksDB would fail the next write as it did the last.
  Status status = room_.admit(0);
  rocksdb::Status s;
  if (status.ok()) s = db_->Resume();
  // Busy: RocksDB is recovering from the error on its own. The refusals go on naming the error
  // (a full disk), not this.
  if (s.IsBusy()) return;
  // Batches written and then refused (their sync failed) are in the memtables: they are put
  // back as the last durable snapshot has them before anything else is written or read.
  if (status.ok()) status = s.ok() ? undo_refused() : Status::from(s);
  // The marks file is written too: it proves there is room again, not just that RocksDB has no
  // error recorded (a failure of the marks file itself leaves none).
  if (status.ok()) status = write_marks_now(revision_.load());
  std::lock_guard lock(mutex_);
  if (!status.ok()) {
    if (status.message() != last_error_)
      spdlog::warn("the ledger cannot resume yet: {}", status.message());
    last_error_ = status.message();
    return;
  }
  sync_failed_ = false;
  written_ = revision_.load();
  {
    std::lock_guard view(view_mutex_);
    checkpoint_written_ = checkpoint_durable_;  // a refused checkpoint was undone
    dirty_.relist_all();                        // and its keys are to be written again
  }
  written_oldest_ = oldest_revision_.load();
  if (config_.sync) durable_.store(take_snapshot());
  healthy_.store(true);
}

void GroupWriter::run() {
  constexpr auto kResumeEvery = std::chrono::seconds(1);
  std::vector<Pending> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (healthy_.load()) {
        // While a sync runs, a few ops wait for it to end and go into one batch (each batch
        // costs a write); many are written at once, so the next sync finds them ready. A failed
        // sync makes the writer unhealthy: then it retries to resume.
        // A checkpoint under way writes its next chunk meanwhile.
        auto ready = [&] {
          return (!queue_.empty() && (!syncing_ || queued_ops_ >= kWriteAhead)) || stopping_ ||
                 !healthy_.load();
        };
        // A durable checkpoint's rows to forget: a writer waiting with nothing dirty is woken
        // when the checkpoint becomes durable; one waiting for a checkpoint's time, then.
        auto drops = [&] {
          return !dropping_.empty() && dropping_.front().at <= checkpoint_durable_.load();
        };
        auto work = [&] { return ready() || checkpointing_ || checkpoint_due(false) || drops(); };
        // Rows awaiting a checkpoint get it on time even when no write comes to wake the writer.
        auto dirty = [&] { return dirty_revision_.load() > checkpoint_written_; };
        // While parked, a caller may take the writer's state to commit its group (submit()):
        // nothing of it is looked at until the caller gives it back.
        writer_parked_ = true;
        for (;;) {
          if (!committing_here_) {
            if (work()) break;
            if (dirty()) {
              auto deadline = checkpointed_at_ + config_.checkpoint_every;
              if (wake_.wait_until(lock, deadline) == std::cv_status::timeout) {
                if (!committing_here_) break;  // a checkpoint is due
                continue;
              }
            } else {
              // The completer wakes the writer when rows become durable only while it waits
              // here.
              waits_for_dirty_ = true;
              wake_.wait(lock);
              waits_for_dirty_ = false;
            }
          } else {
            writer_waits_release_ = true;
            wake_.wait(lock);
            writer_waits_release_ = false;
          }
          // Every return from a wait is counted, spurious or not: each costs futex calls.
          ++stats_.writer_wakeups;
        }
        writer_parked_ = false;
        if (ready()) take_queue(batch);
      } else {
        wake_.wait_for(lock, kResumeEvery, [&] { return !queue_.empty() || stopping_; });
        take_queue(batch);
      }
      if (batch.empty() && stopping_) break;
    }
    if (batch.empty()) {
      if (!healthy_.load()) {
        try_resume();
        if (healthy_.load()) spdlog::info("the ledger accepts writes again");
      }
    } else if (!healthy_.load()) {
      // Queued before the failure: computed on state that may include a refused write.
      refuse(batch);
    } else if (!commit(batch)) {
      spdlog::error("the ledger refused a write, refusing writes until it resumes: {}",
                    last_error());
    }
    // The background work after the batch: the batch's clients wait, the checkpoint does not.
    if (healthy_.load() && checkpoint_due(true)) start_checkpoint();
    if (healthy_.load() && checkpointing_) checkpoint_step();
    if (healthy_.load()) tidy_dirty();
    if (healthy_.load()) drop_trimmed_events();
  }
  // A clean stop leaves every row in its column family: the next start replays nothing.
  while (healthy_.load() && checkpointing_) checkpoint_step();
  if (healthy_.load()) start_checkpoint();
  while (healthy_.load() && checkpointing_) checkpoint_step();
  if (healthy_.load()) drop_trimmed_events();
}

void GroupWriter::take_queue(std::vector<Pending>& batch) {
  batch.swap(queue_);
  queued_ops_ = 0;
  // The next submit() finds room in a vector an answered batch left (see answer()).
  if (!spare_queues_.empty()) {
    queue_.swap(spare_queues_.back());
    spare_queues_.pop_back();
  }
}

void GroupWriter::record_dirty(std::vector<Pending>& batch, Revision revision,
                               std::optional<Revision> checkpoint) {
  for (Pending& p : batch) {
    for (WriteOp& op : p.ops) {
      // An op without events (a lock-delay that ran out) has no journal: its row waits for the
      // next checkpoint, and a crash before it only leaves a lock-delay already past. It counts
      // as above `revision`, so that a checkpoint at `revision` begun before it was recorded
      // does not drop it unwritten.
      Revision at = op.events.empty() ? revision + 1 : op.events.back().revision;
      dirty_.record(op.key, op.row, op.tenures, at);
      op.tenures.clear();
    }
  }
  dirty_.set_revision(revision);
  dirty_revision_.store(revision);
  // Its rows leave dirty_ in chunks on the writer thread (tidy_dirty): all at once here held
  // every sync's answers up to 8 ms at 65k keys.
  if (checkpoint) checkpoint_durable_ = *checkpoint;
}

bool GroupWriter::checkpoint_due(bool timed) const {
  // Nothing durable since the last one: a checkpoint would write nothing new.
  if (checkpointing_ || dirty_revision_.load() <= checkpoint_written_) return false;
  // Also before the event log outgrows events_keep above the checkpoint: it is trimmed only
  // below it (and without waiting for another write).
  return ops_since_checkpoint_ >= config_.checkpoint_ops ||
         written_ - checkpoint_written_ >= config_.events_keep ||
         (timed && std::chrono::steady_clock::now() - checkpointed_at_ >= config_.checkpoint_every);
}

void GroupWriter::start_checkpoint() {
  ops_since_checkpoint_ = 0;
  checkpointed_at_ = std::chrono::steady_clock::now();
  Revision at = 0;
  {
    // Only the list of keys changed since the last checkpoint changes hands here: a walk over
    // every dirty key held the completer (and every reply) ~3.6 ms at 65k keys.
    std::lock_guard lock(view_mutex_);
    if (dirty_.empty()) return;
    at = dirty_.revision();
    dirty_.take_listed(spare_listed_);
  }
  // Braced, not emplace(): clang sees the nested struct's initializers only after the class.
  checkpointing_ = Checkpoint{at, std::move(spare_listed_), {}};
  Checkpoint& c = *checkpointing_;
  std::vector<std::string_view> keys;
  keys.reserve(c.listed.ends.size());
  std::size_t begin = 0;
  for (std::size_t end : c.listed.ends) {
    keys.emplace_back(c.listed.bytes.data() + begin, end - begin);
    begin = end;
  }
  c.keys = KeyOrder(std::move(keys));
}

void GroupWriter::checkpoint_step() {
  Checkpoint& c = *checkpointing_;
  rocksdb::WriteBatch& wb = *write_batch_;
  wb.Clear();
  bool encoded = true;
  // All the keys in key order, not just each chunk's: an insert then lands a few memtable nodes
  // from the previous one, not a chunk's spread of the whole checkpoint away (a quarter fewer
  // instructions per row, and fewer cache misses).
  std::span<const std::string_view> chunk = c.keys.next(kCheckpointChunk);
  {
    std::lock_guard lock(view_mutex_);
    // Each key's newest durable row: one newer than c.at does no harm, as the journals above
    // c.at rebuild the same row, and reads take it from dirty_ until it is dropped.
    for (std::string_view key : chunk) {
      const DirtyKey* dirty = dirty_.find(key);
      if (!dirty) continue;
      if (dirty->row) encoded &= wb.Put(cf_.leases, key, *dirty->row).ok();
      for (const auto& [revision, t] : dirty->tenures) {
        tenure_row_key(key, t.token, scratch_key_);
        encode_tenure(t, scratch_value_);
        encoded &= wb.Put(cf_.tenures, scratch_key_, scratch_value_).ok();
        if (t.token > config_.history_keep) {
          tenure_row_key(key, t.token - config_.history_keep, scratch_key_);
          encoded &= wb.Delete(cf_.tenures, scratch_key_).ok();
        }
      }
    }
  }
  std::optional<Revision> done;
  Revision new_oldest = written_oldest_;
  if (c.keys.done()) {
    done = c.at;
    encoded &= wb.Put(cf_.meta, kCheckpointKey, big_endian(c.at)).ok();
    // The log may shrink as soon as the checkpoint is written, in the same batch.
    encoded &= trim_events(written_, c.at, new_oldest);
  }
  std::vector<Pending> none;
  bool written = write_and_land(encoded, none, 0, written_, new_oldest, done, false);
  if (done || !written) {
    // A written checkpoint's rows leave dirty_ once it is durable (tidy_dirty); a refused one's
    // keys are all listed again when writes resume, and it is started again then.
    if (written) {
      dropping_.push_back(Dropping{c.at, std::move(c.listed), 0});
    } else {
      spare_listed_ = std::move(c.listed);
    }
    checkpointing_.reset();
  }
  if (!written) {
    spdlog::error("the ledger refused a checkpoint, refusing writes until it resumes: {}",
                  last_error());
  } else if (done) {
    checkpoint_written_ = *done;
  }
}

void GroupWriter::tidy_dirty() {
  bool dropped = false;
  {
    // A chunk of each at a time: the completer publishes every sync under this mutex. A growing
    // table moves here, between batches, not in the sync's answers.
    std::lock_guard lock(view_mutex_);
    dirty_.move_some(kMoveChunk);
    if (dropping_.empty()) return;
    Dropping& d = dropping_.front();
    if (checkpoint_durable_ < d.at) return;
    dirty_.drop_listed(d.keys, d.next, kDropChunk, d.at);
    dropped = d.next == d.keys.ends.size();
  }
  if (!dropped) return;
  spare_listed_ = std::move(dropping_.front().keys);
  dropping_.pop_front();
}

void GroupWriter::complete() {
  std::vector<Landing> landings;
  std::vector<const Events*> events;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      // A caller syncing its own group (submit()) answers it before anything landed after it.
      landed_.wait(lock, [&] { return !syncing_ && (!landing_.empty() || writer_done_); });
      if (landing_.empty()) break;
      landings.swap(landing_);
      landed_ops_ = 0;
      syncing_ = true;
    }
    std::uint64_t sync_us = sync_landed(landings);
    std::uint64_t answered = 0;
    for (const Landing& l : landings) answered += l.ok ? l.ops : 0;
    answer(landings, events);
    gather(answered, sync_us);
    bool wake;
    {
      std::lock_guard lock(mutex_);
      syncing_ = false;
      // What the writer left queued during the sync (see run()); else submit() wakes it.
      wake = !queue_.empty();
    }
    if (wake) wake_.notify_one();
  }
  drained_.notify_all();
}

void GroupWriter::gather(std::uint64_t answered, std::uint64_t sync_us) {
  // Clients answered together ask again together. Syncing whatever has landed the moment a sync
  // ends leaves most of their next requests for the sync after: the clients split into cohorts
  // that take turns, each paying a sync of its own. Held back until half of them are in (or for
  // half as long as the sync took), the next sync takes most of them. Measured (bench/ab): the
  // whole cohort or the whole sync's time cost 50 connections 5-10% of their throughput; halves
  // of both cost nothing there and gave 4 and 10 connections a third and a sixth more.
  // A lone op waits for nothing (see submit()), and ops that do not come back (expiries, clients
  // gone) cost at most half a sync's time.
  if (answered <= 1 || sync_us == 0) return;
  auto max_us = static_cast<std::uint64_t>(config_.gather_max.count());
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::microseconds(std::min(sync_us / 2, max_us));
  std::unique_lock lock(mutex_);
  gather_target_ = queued_ops_ + landed_ops_ + answered / 2;
  landed_.wait_until(lock, deadline, [&] {
    return queued_ops_ + landed_ops_ >= gather_target_ || stopping_ || !healthy_.load();
  });
  gather_target_ = 0;
}

void GroupWriter::answer(std::vector<Landing>& landings, std::vector<const Events*>& events) {
  EventSink sink;
  {
    std::lock_guard lock(mutex_);
    sink = sink_;
  }
  std::uint64_t n = 0;
  for (Landing& l : landings) {
    n += l.batch.size();
    if (l.ok && sink) {
      events.clear();
      for (const Pending& p : l.batch) {
        for (const WriteOp& op : p.ops) {
          if (!op.events.empty()) events.push_back(&op.events);
        }
      }
      if (!events.empty()) sink(events);
    }
    for (Pending& p : l.batch) p.done(l.ok, p.ops);
    l.batch.clear();
  }
  {
    std::lock_guard lock(mutex_);
    finished_ += n;
    // Light load: the groups come one at a time, each answered before the next arrives.
    lone_ = n <= 1 && queue_.empty() && landing_.empty();
    // The batches' vectors go back to the writer's queue (take_queue()), not to the heap.
    for (Landing& l : landings) {
      if (l.batch.capacity() > 0 && spare_queues_.size() < kSpareQueues) {
        spare_queues_.push_back(std::move(l.batch));
      }
    }
  }
  landings.clear();
  drained_.notify_all();
}

std::uint64_t GroupWriter::sync_landed(std::vector<Landing>& landings) {
  std::uint64_t ops = 0, micros = 0, written = 0;
  Landing* newest = nullptr;
  Landing* newest_rows = nullptr;  // the newest that took a snapshot
  for (Landing& l : landings) {
    if (!l.ok) continue;
    ops += l.ops;
    micros += l.write_us;
    ++written;
    newest = &l;
    if (l.snapshot) newest_rows = &l;
  }
  if (!newest) return 0;
  bool failed_before;
  {
    std::lock_guard lock(mutex_);
    failed_before = sync_failed_;
  }
  bool wake;
  auto started = std::chrono::steady_clock::now();
  // One sync covers every batch written before it began. After a failed one, the pages of the
  // WAL it did not sync may be gone: nothing written after it counts until writes resume.
  Status status = failed_before ? Status(errc::io_error, "an earlier WAL sync failed")
                                : Status::from(db_->SyncWAL());
  std::uint64_t sync_us = micros_since(started);
  micros += sync_us;
  if (status.ok()) {
    std::lock_guard lock(view_mutex_);
    for (Landing& l : landings) {
      if (!l.ok) continue;
      record_dirty(l.batch, l.revision, l.checkpoint);
    }
    revision_.store(newest->revision);
    oldest_revision_.store(newest->oldest);
    if (newest_rows) durable_.store(std::move(newest_rows->snapshot));
  } else {
    for (Landing& l : landings) {
      if (!l.ok) continue;
      l.ok = false;
      for (Pending& p : l.batch) unsettled_.fetch_add(static_cast<std::int64_t>(p.ops.size()));
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (status.ok() || !failed_before) {
      stats_.syncs++;
      count_group(stats_, ops, micros);
    }
    if (!status.ok() && !failed_before) {
      // Under the mutex: the writer thread waits for this (see run()).
      healthy_.store(false);
      sync_failed_ = true;
      stats_.failures++;
      last_error_ = status.message();
      spdlog::error("a WAL sync failed, refusing writes until the ledger resumes: {}",
                    status.message());
    }
    for (Landing& l : landings) {
      if (l.rep.empty()) continue;
      if (status.ok()) {
        spare_reps_.push_back(std::move(l.rep));
      } else {
        undo_.push_back(std::move(l.rep));
      }
    }
    // The writer waits for this only while it has no rows to checkpoint (see run()), or to
    // resume.
    wake = (status.ok() && waits_for_dirty_) || !healthy_.load();
  }
  // Last: try_resume() waits for this, and then finds every refusal counted and every undo kept.
  unlanded_.fetch_sub(static_cast<std::int64_t>(written));
  if (wake) wake_.notify_one();
  return sync_us;
}

bool GroupWriter::commit(std::vector<Pending>& batch) {
  rocksdb::WriteBatch& wb = *write_batch_;
  wb.Clear();
  Revision next = written_;
  bool encoded = true;
  std::uint64_t ops = 0;
  for (Pending& p : batch) {
    ops += p.ops.size();
    for (WriteOp& op : p.ops) {
      // One row per op: its events, the last of which carries the op's lease row and ended
      // tenures (its journal). Those reach their own column families with the next checkpoint;
      // a random-key memtable insert per row costs far more than an append to the event log.
      for (std::size_t i = 0; i < op.events.size(); ++i) {
        Event& e = op.events[i];
        e.revision = ++next;
        encode_event(e, scratch_value_);
        if (i + 1 == op.events.size()) append_journal(op.row, op.tenures, scratch_value_);
        encoded &= wb.Put(cf_.events, big_endian(e.revision), scratch_value_).ok();
      }
    }
  }
  ops_since_checkpoint_ += ops;
  Revision new_oldest;
  encoded &= trim_events(next, checkpoint_written_, new_oldest);
  // A trim of the log moves its meta row: that batch is not events alone.
  return write_and_land(encoded, batch, ops, next, new_oldest, std::nullopt,
                        new_oldest == written_oldest_);
}

bool GroupWriter::trim_events(Revision next, Revision checkpoint, Revision& new_oldest) {
  new_oldest = written_oldest_;
  // Events above the last checkpoint are the only copy of their journals: never trimmed.
  Revision trim_to = std::min(next - std::min(next, config_.events_keep) + 1, checkpoint + 1);
  if (trim_to <= written_oldest_ + kEventTrimStep + 1) return true;
  new_oldest = trim_to;
  // Only the bound moves here: nothing reads below it, and the events under it leave the disk
  // later, whole files at a time (drop_trimmed_events).
  return write_batch_->Put(cf_.meta, kOldestKey, big_endian(new_oldest)).ok();
}

void GroupWriter::drop_trimmed_events() {
  // Only below the durable bound: a crash must never find the bound older than the first event.
  Revision oldest = oldest_revision_.load();
  std::uint64_t step = std::clamp(config_.events_keep / 16, kEventTrimStep, kEventDropStep);
  if (oldest < events_dropped_below_ + step) return;
  events_dropped_below_ = oldest;
  // Not a range tombstone: the log is appended in key order, so its flushes reach the lower
  // levels by trivial moves, and a tombstone below them made every compaction of the log
  // rewrite all the live events it overlapped (write amplification 3.8 at 50 x 16, a fifth of
  // the daemon's CPU; docs/benchmarks.md).
  std::string end = big_endian(oldest);
  rocksdb::Slice end_key(end);
  rocksdb::Status s = rocksdb::DeleteFilesInRange(db_, cf_.events, nullptr, &end_key, false);
  // Not a fault of the ledger: the files are dropped at the next step.
  if (!s.ok()) spdlog::warn("cannot drop trimmed events' files: {}", s.ToString());
}

bool GroupWriter::write_and_land(bool encoded, std::vector<Pending>& batch, std::uint64_t ops,
                                 Revision next, Revision new_oldest,
                                 std::optional<Revision> checkpoint, bool events_alone) {
  rocksdb::WriteBatch& wb = *write_batch_;
  // With sync on, the completer syncs: this thread goes on to the next batch meanwhile.
  rocksdb::WriteOptions wo;
  wo.sync = false;
  auto started = std::chrono::steady_clock::now();
  Status status = encoded ? reserve_for(next) : Status(errc::other, "cannot encode a row");
  if (status.ok()) status = room_.admit(wb.GetDataSize());
  std::shared_ptr<const rocksdb::Snapshot> snapshot;
  if (status.ok()) {
    std::lock_guard lock(write_mutex_);
    status = Status::from(db_->Write(wo, &wb));
    if (status.ok() && config_.sync) {
      // The ledger exactly after this batch: nothing else writes meanwhile. A batch of events
      // alone leaves every other row as it was, and reads of the log stop at revision()
      // instead: a RocksDB snapshot per batch was an allocation per op at one connection.
      if (!events_alone || aside_unpublished_) {
        snapshot = take_snapshot();
        aside_unpublished_ = false;
      }
      unlanded_.fetch_add(1);
    }
  }
  std::uint64_t micros = micros_since(started);
  std::string rep;
  {
    std::lock_guard lock(mutex_);
    stats_.batches++;
    stats_.ops += ops;
    if (!config_.sync && ops > 0) count_group(stats_, ops, micros);
    if (!status.ok()) {
      stats_.failures++;
      last_error_ = status.message();
    }
    if (status.ok() && config_.sync && !spare_reps_.empty()) {
      rep = std::move(spare_reps_.back());
      spare_reps_.pop_back();
    }
  }
  if (!status.ok()) {
    // Sticky: later writes would be computed on state that never reached disk.
    healthy_.store(false);
    refuse(batch);
    return false;
  }
  written_ = next;
  written_oldest_ = new_oldest;
  Landing landing;
  landing.ok = true;
  landing.ops = ops;
  landing.write_us = micros;
  landing.revision = next;
  landing.oldest = new_oldest;
  landing.checkpoint = checkpoint;
  if (config_.sync) {
    rep.assign(wb.Data());
    landing.rep = std::move(rep);
    landing.snapshot = std::move(snapshot);
  } else {
    std::lock_guard lock(view_mutex_);
    record_dirty(batch, next, checkpoint);
    revision_.store(next);
    oldest_revision_.store(new_oldest);
  }
  landing.batch = std::move(batch);
  batch.clear();
  land(std::move(landing));
  return true;
}

}  // namespace tenure::storage
