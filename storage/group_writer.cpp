#include "storage/group_writer.hpp"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <bit>
#include <chrono>

#include "storage/codec.hpp"
#include "storage/marks.hpp"

namespace tenure::storage {
namespace {

std::size_t log2_bucket(std::uint64_t v, std::size_t buckets) {
  std::size_t b = v == 0 ? 0 : static_cast<std::size_t>(std::bit_width(v)) - 1;
  return b < buckets ? b : buckets - 1;
}

// Events are trimmed in steps, not on every batch, to keep range tombstones few.
constexpr std::uint64_t kEventTrimStep = 4096;

}  // namespace

GroupWriter::GroupWriter(rocksdb::DB* db, ColumnFamilies cf, WriterConfig config, Revision revision,
                         Revision oldest_revision)
    : db_(db),
      cf_(cf),
      config_(std::move(config)),
      write_batch_(std::make_unique<rocksdb::WriteBatch>()),
      revision_(revision),
      oldest_revision_(oldest_revision) {}

GroupWriter::~GroupWriter() { stop(); }

Status GroupWriter::start(Revision reserved) {
  reserved_ = reserved;
  Status status = reserve_for(revision_.load() + 1);
  if (status.ok()) thread_ = std::thread([this] { run(); });
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
    std::lock_guard lock(mutex_);
    if (healthy_.load() && !stopping_) {
      queue_.push_back(Pending{std::move(ops), std::move(done)});
      ++submitted_;
      ++stats_.groups;
      wake_.notify_one();
      return;
    }
  }
  unsettled_.fetch_add(static_cast<std::int64_t>(ops.size()));
  done(false, ops);
}

void GroupWriter::refusal_settled() { unsettled_.fetch_sub(1); }

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

void GroupWriter::refuse(std::vector<Pending>& batch) {
  for (Pending& p : batch) {
    unsettled_.fetch_add(static_cast<std::int64_t>(p.ops.size()));
    p.done(false, p.ops);
  }
}

void GroupWriter::try_resume() {
  // Every actor that was refused has reloaded its key, so nothing builds on a failed write.
  if (unsettled_.load() != 0) return;
  rocksdb::Status s = db_->Resume();
  // The marks file is written too: it proves there is room again, not just that RocksDB has no
  // error recorded (a failure of the marks file itself leaves none).
  Status status = s.ok() ? write_marks_now(revision_.load()) : Status::from(s);
  std::lock_guard lock(mutex_);
  if (!status.ok()) {
    if (status.message() != last_error_)
      spdlog::warn("the ledger cannot resume yet: {}", status.message());
    last_error_ = status.message();
    return;
  }
  healthy_.store(true);
}

void GroupWriter::run() {
  constexpr auto kResumeEvery = std::chrono::seconds(1);
  std::vector<Pending> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (healthy_.load()) {
        wake_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      } else {
        wake_.wait_for(lock, kResumeEvery, [&] { return !queue_.empty() || stopping_; });
      }
      if (queue_.empty() && stopping_) break;
      batch.swap(queue_);
    }
    std::size_t n = batch.size();
    if (!healthy_.load()) {
      // Queued before the failure: computed on state that may include a refused write.
      refuse(batch);
      if (n == 0) try_resume();
    } else if (!commit(batch)) {
      spdlog::error("the ledger refused a write, refusing writes until it resumes: {}",
                    last_error());
    }
    batch.clear();
    {
      std::lock_guard lock(mutex_);
      finished_ += n;
    }
    drained_.notify_all();
    if (n == 0 && healthy_.load()) spdlog::info("the ledger accepts writes again");
  }
  drained_.notify_all();
}

bool GroupWriter::commit(std::vector<Pending>& batch) {
  rocksdb::WriteBatch& wb = *write_batch_;
  wb.Clear();
  Revision next = revision_.load();
  bool encoded = true;
  std::size_t ops = 0;
  for (Pending& p : batch) {
    ops += p.ops.size();
    for (WriteOp& op : p.ops) {
      if (op.row) encoded &= wb.Put(cf_.leases, op.key, *op.row).ok();
      for (const TenureRecord& t : op.tenures) {
        // A live tenure is read from the lease row; only ended ones get a row of their own, which
        // saves one memtable insert per acquire.
        if (!t.ended_at) continue;
        tenure_row_key(op.key, t.token, scratch_key_);
        encode_tenure(t, scratch_value_);
        encoded &= wb.Put(cf_.tenures, scratch_key_, scratch_value_).ok();
        if (t.token > config_.history_keep) {
          tenure_row_key(op.key, t.token - config_.history_keep, scratch_key_);
          encoded &= wb.Delete(cf_.tenures, scratch_key_).ok();
        }
      }
      for (Event& e : op.events) {
        e.revision = ++next;
        encode_event(e, scratch_value_);
        encoded &= wb.Put(cf_.events, big_endian(e.revision), scratch_value_).ok();
      }
    }
  }
  Revision oldest = oldest_revision_.load();
  Revision new_oldest = oldest;
  if (next > config_.events_keep && next - config_.events_keep > oldest + kEventTrimStep) {
    new_oldest = next - config_.events_keep + 1;
    // From "", not BE64(0): a tombstone key outside the insert-hint prefix domain (see
    // Ledger::open) does not disturb the hint, which RocksDB shares with the tombstone table.
    encoded &= wb.DeleteRange(cf_.events, "", big_endian(new_oldest)).ok();
    encoded &= wb.Put(cf_.meta, "oldest_revision", big_endian(new_oldest)).ok();
  }

  rocksdb::WriteOptions wo;
  wo.sync = config_.sync;
  auto started = std::chrono::steady_clock::now();
  Status status = encoded ? reserve_for(next) : Status(errc::other, "cannot encode a row");
  if (status.ok()) status = Status::from(db_->Write(wo, &wb));
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::steady_clock::now() - started)
                    .count();
  EventSink sink;
  {
    std::lock_guard lock(mutex_);
    stats_.batches++;
    stats_.ops += ops;
    if (config_.sync) stats_.syncs++;
    if (ops > stats_.max_batch) stats_.max_batch = ops;
    stats_.batch_size_log2[log2_bucket(ops, stats_.batch_size_log2.size())]++;
    stats_.write_us_log2[log2_bucket(static_cast<std::uint64_t>(micros),
                                     stats_.write_us_log2.size())]++;
    stats_.write_us_sum += static_cast<std::uint64_t>(micros);
    if (!status.ok()) {
      stats_.failures++;
      last_error_ = status.message();
    }
    sink = sink_;
  }
  if (!status.ok()) {
    // Sticky: later writes would be computed on state that never reached disk.
    healthy_.store(false);
    refuse(batch);
    return false;
  }
  Revision revision_before = revision_.load();
  revision_.store(next);
  oldest_revision_.store(new_oldest);
  if (sink && next > revision_before) {
    scratch_events_.clear();
    for (const Pending& p : batch) {
      for (const WriteOp& op : p.ops) {
        if (!op.events.empty()) scratch_events_.push_back(&op.events);
      }
    }
    sink(scratch_events_);
  }
  for (Pending& p : batch) p.done(true, p.ops);
  return true;
}

}  // namespace tenure::storage
