#include "storage/group_writer.hpp"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <bit>
#include <chrono>

#include "storage/codec.hpp"

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
      config_(config),
      write_batch_(std::make_unique<rocksdb::WriteBatch>()),
      revision_(revision),
      oldest_revision_(oldest_revision),
      thread_([this] { run(); }) {}

GroupWriter::~GroupWriter() { stop(); }

void GroupWriter::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      if (!thread_.joinable()) return;
    }
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GroupWriter::set_event_sink(EventSink sink) {
  std::lock_guard lock(mutex_);
  sink_ = std::move(sink);
}

void GroupWriter::submit(WriteOp op, CommitDone done) {
  {
    std::lock_guard lock(mutex_);
    if (healthy_.load() && !stopping_) {
      queue_.push_back(Pending{std::move(op), std::move(done)});
      ++submitted_;
      wake_.notify_one();
      return;
    }
  }
  done(false, op.events);
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

void GroupWriter::run() {
  std::vector<Pending> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) break;
      batch.swap(queue_);
    }
    std::size_t n = batch.size();
    commit(batch);
    batch.clear();
    {
      std::lock_guard lock(mutex_);
      finished_ += n;
    }
    drained_.notify_all();
  }
  drained_.notify_all();
}

bool GroupWriter::commit(std::vector<Pending>& batch) {
  rocksdb::WriteBatch& wb = *write_batch_;
  wb.Clear();
  Revision next = revision_.load();
  bool encoded = true;
  for (Pending& p : batch) {
    WriteOp& op = p.op;
    if (op.state) encoded &= wb.Put(cf_.leases, op.key, encode_state(*op.state)).ok();
    for (const TenureRecord& t : op.tenures) {
      // A live tenure is read from the lease row; only ended ones get a row of their own, which
      // saves one memtable insert per acquire.
      if (!t.ended_at) continue;
      encoded &= wb.Put(cf_.tenures, tenure_row_key(op.key, t.token), encode_tenure(t)).ok();
      if (t.token > config_.history_keep) {
        encoded &=
            wb.Delete(cf_.tenures, tenure_row_key(op.key, t.token - config_.history_keep)).ok();
      }
    }
    for (Event& e : op.events) {
      e.revision = ++next;
      encoded &= wb.Put(cf_.events, big_endian(e.revision), encode_event(e)).ok();
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
  rocksdb::Status status = encoded ? db_->Write(wo, &wb) : rocksdb::Status::Corruption("encode");
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::steady_clock::now() - started)
                    .count();
  EventSink sink;
  {
    std::lock_guard lock(mutex_);
    stats_.batches++;
    stats_.ops += batch.size();
    if (config_.sync) stats_.syncs++;
    if (batch.size() > stats_.max_batch) stats_.max_batch = batch.size();
    stats_.batch_size_log2[log2_bucket(batch.size(), stats_.batch_size_log2.size())]++;
    stats_.write_us_log2[log2_bucket(static_cast<std::uint64_t>(micros),
                                     stats_.write_us_log2.size())]++;
    stats_.write_us_sum += static_cast<std::uint64_t>(micros);
    if (!status.ok()) {
      stats_.failures++;
      last_error_ = status.ToString();
    }
    sink = sink_;
  }
  if (!status.ok()) {
    // Sticky: later writes would be computed on state that never reached disk.
    healthy_.store(false);
    for (Pending& p : batch) p.done(false, p.op.events);
    return false;
  }
  revision_.store(next);
  oldest_revision_.store(new_oldest);
  for (Pending& p : batch) {
    if (sink && !p.op.events.empty()) sink(p.op.events);
    p.done(true, p.op.events);
  }
  return true;
}

}  // namespace tenure::storage
