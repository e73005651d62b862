#include "storage/etcd_ledger.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/parse_number.hpp"
#include "core/slot.hpp"
#include "core/thread_name.hpp"
#include "storage/codec.hpp"

namespace tenure::storage {

namespace {

constexpr std::uint64_t kEventTrimStep = 4096;
constexpr std::int64_t kPage = 1000;
constexpr auto kRetryEvery = std::chrono::milliseconds(200);
constexpr auto kLinger = std::chrono::milliseconds(1);

// The smallest key after `key`.
std::string successor(std::string_view key) { return std::string(key) + '\0'; }

// Consecutive slots this node claimed at one create revision.
struct ClaimRun {
  std::uint32_t first, last;
  std::int64_t revision;
};

// The runs that cover the claims a transaction's groups were computed under (sorted by slot, one
// revision per slot): a run goes on through the slots between two of them that this node holds
// at the same revision. The writer claims every free slot in one transaction, so their claims
// share a revision, and one range compare per run fences what one compare per slot did, for a
// fraction of etcd's work (docs/cluster.md).
std::vector<ClaimRun> claim_runs(const std::vector<std::pair<std::uint32_t, std::int64_t>>& claims,
                                 const SlotClaims& held) {
  std::vector<ClaimRun> runs;
  std::size_t i = 0;
  while (i < claims.size()) {
    ClaimRun run{claims[i].first, claims[i].first, claims[i].second};
    ++i;
    while (i < claims.size()) {
      auto [next, revision] = claims[i];
      bool between_held = true;
      for (std::uint32_t slot = run.last + 1; slot < next && between_held; ++slot) {
        between_held = held.claim_revision(slot) == run.revision;
      }
      if (revision != run.revision || !between_held) break;
      run.last = next;
      ++i;
    }
    runs.push_back(run);
  }
  return runs;
}

// P/events/REV holds the events of one transaction, with revisions REV, REV + 1, ...: each as a
// 4-byte big-endian length and the codec's bytes. One key per transaction, not per event: etcd's
// cost is per key.
void append_event(const Event& event, std::string& scratch, std::string& out) {
  encode_event(event, scratch);
  auto size = static_cast<std::uint32_t>(scratch.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(size >> shift));
  out += scratch;
}

// Appends the events of a transaction's value to `out` (one that cannot be decoded is skipped,
// as from RocksDB's log; a truncated value ends there).
void decode_events(std::string_view value, Revision first, std::vector<Event>& out) {
  for (Revision revision = first; value.size() >= 4; ++revision) {
    std::uint32_t size = 0;
    for (int i = 0; i < 4; ++i) size = size << 8 | static_cast<unsigned char>(value[i]);
    value.remove_prefix(4);
    if (size > value.size()) return;
    if (auto event = decode_event(value.substr(0, size), revision)) {
      out.push_back(std::move(*event));
    }
    value.remove_prefix(size);
  }
}

}  // namespace

EtcdLedger::EtcdLedger(const EtcdLedgerOptions& options, SlotClaims& claims)
    : options_(options),
      claims_(claims),
      prefix_(options.prefix),
      max_txn_ops_(options.max_txn_ops),
      max_txn_bytes_(options.max_txn_bytes) {
  while (prefix_.ends_with('/')) prefix_.pop_back();
  client_ = std::make_unique<EtcdClient>(options.etcd);
  watch_client_ = std::make_unique<EtcdClient>(options.etcd);
}

std::unique_ptr<EtcdLedger> EtcdLedger::open(const EtcdLedgerOptions& options, SlotClaims& claims,
                                             Status& status) {
  std::unique_ptr<EtcdLedger> ledger(new EtcdLedger(options, claims));
  status = ledger->start();
  if (!status.ok()) return nullptr;
  return ledger;
}

EtcdLedger::~EtcdLedger() { stop(); }

std::string EtcdLedger::slot_dir(std::uint32_t slot) const {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%03u", slot);
  return digits;
}

std::string EtcdLedger::lease_key(std::string_view key) const {
  return prefix_ + "/leases/" + slot_dir(slot_of(key)) + "/" + std::string(key);
}

std::string EtcdLedger::tenure_key(std::string_view key, Token token) const {
  return prefix_ + "/tenures/" + slot_dir(slot_of(key)) + "/" + tenure_row_key(key, token);
}

std::string EtcdLedger::slot_key(std::uint32_t slot) const {
  return prefix_ + "/slots/" + slot_dir(slot);
}

std::string EtcdLedger::event_key(Revision revision) const {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(revision));
  return prefix_ + "/events/" + digits;
}

Status EtcdLedger::fence() {
  // The unanswered transaction compared P/rev's mod revision with rev_mod_. Whatever etcd orders
  // after this one fails that compare: put P/rev again (same value) if it still has that mod
  // revision. Either way, from here on the unanswered one has committed or never will, and
  // every read sees which.
  EtcdTxn txn;
  txn.compare_mod_revision(rev_key(), rev_mod_);
  txn.put(rev_key(), std::to_string(last_));
  EtcdTxnResult result;
  return client_->txn(txn, result);
}

Status EtcdLedger::resync() {
  if (unfenced_.load()) {
    if (Status status = fence(); !status.ok()) return status;
    // Reads from now on (P/rev's below, the keys' own) see what the unanswered one did.
    unfenced_.store(false);
  }
  RangeRequest request;
  request.key = rev_key();
  RangeResult result;
  Status status = client_->range(request, result);
  if (!status.ok()) return status;
  if (result.kvs.empty()) {
    last_ = 0;
    rev_mod_ = 0;
  } else {
    auto value = parse_number<std::uint64_t>(result.kvs[0].value, 10);
    if (!value) return Status(errc::corruption, rev_key() + " is not a revision");
    last_ = *value;
    rev_mod_ = result.kvs[0].mod_revision;
  }
  etcd_revision_read_ = result.revision;
  return {};
}

Status EtcdLedger::start() {
  Status status = resync();
  if (!status.ok()) return status;
  announced_.store(last_);
  delivered_.store(last_);
  start_etcd_revision_ = etcd_revision_read_;
  // The oldest event kept (older ones were trimmed); the next one if there is none.
  RangeRequest first;
  first.key = event_key(0);
  first.range_end = prefix_end(prefix_ + "/events/");
  first.limit = 1;
  RangeResult result;
  status = client_->range(first, result);
  if (!status.ok()) return status;
  Revision oldest = last_ + 1;
  if (!result.kvs.empty()) oldest = event_revision(result.kvs[0].key).value_or(oldest);
  oldest_.store(oldest);
  writer_ = std::thread([this] {
    name_this_thread("etcd-write");
    run();
  });
  watcher_ = std::thread([this] {
    name_this_thread("etcd-watch");
    watch_loop();
  });
  return {};
}

void EtcdLedger::set_event_sink(EventSink sink) {
  std::lock_guard lock(mutex_);
  sink_ = std::move(sink);
}

void EtcdLedger::submit(std::vector<WriteOp> ops, CommitDone done) {
  Pending pending{std::move(ops), std::move(done), {}, 0, 0};
  bool claimed = true;
  for (const WriteOp& op : pending.ops) {
    std::uint32_t slot = slot_of(op.key);
    auto claim = claims_.claim_revision(slot);
    if (!claim) claimed = false;
    pending.claims.emplace_back(slot, claim.value_or(0));
    // Its row and its ended tenures (put, and the one past history_keep deleted); the events
    // of a whole transaction are one key, counted once per group below.
    std::size_t writes = (op.row ? 1 : 0) + 2 * op.tenures.size();
    pending.entries += writes;
    // Keys, rows, records and events, in base64 in JSON.
    pending.bytes += ((writes + op.events.size()) * (op.key.size() + prefix_.size() + 96) +
                      (op.row ? op.row->size() : 0)) *
                     2;
  }
  pending.entries += 1;
  std::sort(pending.claims.begin(), pending.claims.end());
  pending.claims.erase(std::unique(pending.claims.begin(), pending.claims.end()),
                       pending.claims.end());
  {
    std::lock_guard lock(mutex_);
    // Answers go in submit order: a group refused while earlier ones are still queued or being
    // written is refused behind them by the writer. Answered at once, it could overtake an older
    // group of the same key actor, which then finds the actor's books already closed.
    bool behind_others = submitted_ > finished_;
    if (!stopping_ && ((claimed && healthy_.load()) || behind_others)) {
      queue_.push_back(std::move(pending));
      ++submitted_;
      ++stats_.groups;
      wake_.notify_one();
      return;
    }
  }
  // Not ours (any more), or etcd is failing: nothing is written, the engine answers unavailable.
  unsettled_.fetch_add(static_cast<std::int64_t>(pending.ops.size()));
  pending.done(false, pending.ops);
}

void EtcdLedger::flush() {
  std::unique_lock lock(mutex_);
  std::uint64_t target = submitted_;
  drained_.wait(lock, [&] { return finished_ >= target || writer_done_; });
}

void EtcdLedger::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();  // drains what was submitted
  {
    std::lock_guard lock(mutex_);
    watch_stopping_ = true;
  }
  watch_client_->stop_watch();
  delivered_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

WriterStats EtcdLedger::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string EtcdLedger::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

void EtcdLedger::fail(const Status& status) {
  std::lock_guard lock(mutex_);
  if (status.message() != last_error_) spdlog::warn("cluster ledger: {}", status.message());
  last_error_ = status.message();
  stats_.failures++;
}

void EtcdLedger::answer(std::vector<Pending>& batch, bool ok) {
  for (Pending& p : batch) p.done(ok, p.ops);
  {
    std::lock_guard lock(mutex_);
    finished_ += batch.size();
  }
  batch.clear();
  drained_.notify_all();
}

void EtcdLedger::refuse(std::vector<Pending>& batch) {
  for (Pending& p : batch) unsettled_.fetch_add(static_cast<std::int64_t>(p.ops.size()));
  answer(batch, false);
}

void EtcdLedger::run() {
  std::vector<Pending> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, kRetryEvery, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty() && stopping_) break;
      // etcd's cost is mostly per transaction, not per op: while the last one carried several
      // ops and fewer are queued, the rest are likely on their way; wait a little for them.
      auto queued = [&] {
        std::size_t ops = 0;
        for (const Pending& p : queue_) ops += p.ops.size();
        return ops;
      };
      if (!queue_.empty() && last_batch_ops_ > 1 && queued() < last_batch_ops_) {
        wake_.wait_for(lock, kLinger, [&] { return stopping_ || queued() >= last_batch_ops_; });
      }
      // As many groups as one transaction takes (at least one).
      std::size_t entries = 2, bytes = 1024, taken = 0;
      while (taken < queue_.size()) {
        const Pending& p = queue_[taken];
        entries += p.entries + p.claims.size();
        bytes += p.bytes;
        if (taken > 0 && (entries > max_txn_ops_ || bytes > max_txn_bytes_)) break;
        ++taken;
      }
      last_batch_ops_ = 0;
      for (std::size_t i = 0; i < taken; ++i) last_batch_ops_ += queue_[i].ops.size();
      batch.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(taken)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(taken));
    }
    if (!healthy_.load()) {
      // Writes resume once every actor that was refused has read its key back (nothing builds
      // on a write that may not have happened) and P/rev could be read again.
      if (unsettled_.load() == 0) {
        Status status = resync();
        if (status.ok()) {
          healthy_.store(true);
        } else {
          fail(status);
        }
      }
      if (!healthy_.load()) {
        refuse(batch);
        continue;
      }
    }
    if (!batch.empty()) commit(batch);
  }
  std::lock_guard lock(mutex_);
  writer_done_ = true;
  drained_.notify_all();
}

void EtcdLedger::commit(std::vector<Pending>& batch) {
  auto started = std::chrono::steady_clock::now();
  std::vector<Pending> refused;
  std::unordered_map<std::string, std::optional<std::string>> writes;  // nullopt: delete
  std::string scratch, events;
  while (!batch.empty()) {
    // The claims every group was computed under; a group whose claim is gone is refused.
    std::vector<std::pair<std::uint32_t, std::int64_t>> claims;
    for (auto it = batch.begin(); it != batch.end();) {
      bool ours = std::all_of(it->claims.begin(), it->claims.end(), [&](const auto& c) {
        return claims_.claim_revision(c.first) == c.second;
      });
      if (ours) {
        claims.insert(claims.end(), it->claims.begin(), it->claims.end());
        ++it;
      } else {
        refused.push_back(std::move(*it));
        it = batch.erase(it);
      }
    }
    if (!refused.empty()) refuse(refused);
    if (batch.empty()) return;
    std::sort(claims.begin(), claims.end());
    claims.erase(std::unique(claims.begin(), claims.end()), claims.end());

    EtcdTxn txn;
    txn.compare_mod_revision(rev_key(), rev_mod_);
    std::vector<ClaimRun> runs = claim_runs(claims, claims_);
    for (const ClaimRun& run : runs) {
      txn.compare_create_revision(slot_key(run.first), run.revision, slot_key(run.last + 1));
    }
    txn.on_failure_range(rev_key());
    txn.on_failure_range(slot_key(0), slot_key(kSlots));

    // Later writes of a key win, as in a RocksDB batch; etcd takes each key once per txn.
    writes.clear();
    events.clear();
    Revision next = last_;
    std::uint64_t ops = 0;
    for (Pending& p : batch) {
      ops += p.ops.size();
      for (WriteOp& op : p.ops) {
        if (op.row) {
          writes[lease_key(op.key)] = *op.row;
          std::uint32_t slot = slot_of(op.key);
          auto claim = std::lower_bound(claims.begin(), claims.end(),
                                        std::pair<std::uint32_t, std::int64_t>{slot, 0});
          if (claim != claims.end() && claim->first == slot) {
            known_rows_.may_write(slot, claim->second, fnv1a_64(op.key));
          }
        }
        for (const TenureRecord& t : op.tenures) {
          if (!t.ended_at) continue;  // the live tenure is read from the lease row
          encode_tenure(t, scratch);
          writes[tenure_key(op.key, t.token)] = scratch;
          if (t.token > options_.history_keep) {
            writes[tenure_key(op.key, t.token - options_.history_keep)] = std::nullopt;
          }
        }
        for (Event& e : op.events) {
          e.revision = ++next;
          append_event(e, scratch, events);
        }
      }
    }
    if (next > last_) writes[event_key(last_ + 1)] = events;
    for (auto& [key, value] : writes) {
      if (value) {
        txn.put(key, *value);
      } else {
        txn.delete_key(key);
      }
    }
    Revision oldest = oldest_.load();
    Revision new_oldest = oldest;
    if (next > options_.events_keep && next - options_.events_keep > oldest + kEventTrimStep) {
      // Transactions whose events all fall below the log's length go.
      RangeRequest keep;
      keep.key = event_key(0);
      keep.range_end = successor(event_key(next - options_.events_keep + 1));
      keep.limit = 1;
      keep.descend = true;
      RangeResult found;
      if (client_->range(keep, found).ok() && !found.kvs.empty()) {
        new_oldest = event_revision(found.kvs[0].key).value_or(oldest);
        if (new_oldest > oldest) txn.delete_range(event_key(0), event_key(new_oldest));
      }
    }
    txn.put(rev_key(), std::to_string(next));

    EtcdTxnResult result;
    Status status = client_->txn(txn, result);
    bool too_big = status.code() == errc::rejected &&
                   (status.message().find("too many operations") != std::string::npos ||
                    status.message().find("too large") != std::string::npos);
    if (too_big && batch.size() > 1) {
      // etcd runs with lower limits than we were told: half now, the rest first in line.
      max_txn_ops_ = std::max<std::size_t>(1, std::min(max_txn_ops_, txn.success_ops() / 2));
      max_txn_bytes_ = std::max<std::size_t>(1, std::min(max_txn_bytes_, txn.bytes() / 2));
      spdlog::warn("cluster ledger: {}; transactions now take at most {} writes", status.message(),
                   max_txn_ops_);
      auto half = batch.begin() + static_cast<std::ptrdiff_t>(batch.size() / 2);
      {
        std::lock_guard lock(mutex_);
        queue_.insert(queue_.begin(), std::make_move_iterator(half),
                      std::make_move_iterator(batch.end()));
      }
      batch.erase(half, batch.end());
      continue;
    }
    if (!status.ok()) {
      // Maybe committed, maybe not, maybe later: the engine reads its keys back before writing
      // them again, once resync() has settled which (before their refusals reach them).
      unfenced_.store(true);
      fail(status);
      healthy_.store(false);
      refuse(batch);
      return;
    }
    if (result.succeeded) {
      last_ = next;
      rev_mod_ = result.revision;  // P/rev was put by this transaction
      oldest_.store(new_oldest);
      std::uint64_t micros = micros_since(started);
      {
        std::unique_lock lock(mutex_);
        stats_.batches++;
        stats_.syncs++;
        stats_.ops += ops;
        count_group(stats_, ops, micros);
        // Watchers see an event before its writer hears it committed, as on one node.
        if (!delivered_cv_.wait_for(lock, options_.etcd.timeout,
                                    [&] { return delivered_.load() >= next; })) {
          watch_stalled_ = true;
        }
      }
      answer(batch, true);
      return;
    }
    // A compare failed: P/rev moved (another node wrote: retry above it), or a claim is gone.
    bool moved = false;
    if (!result.ranges.empty()) {
      const RangeResult& rev = result.ranges[0];
      std::int64_t mod = rev.kvs.empty() ? 0 : rev.kvs[0].mod_revision;
      auto value = rev.kvs.empty() ? std::optional<std::uint64_t>(0)
                                   : parse_number<std::uint64_t>(rev.kvs[0].value, 10);
      if (value && mod != rev_mod_) {
        moved = true;
        last_ = *value;
        rev_mod_ = mod;
        std::lock_guard lock(mutex_);
        stats_.conflicts++;
      }
    }
    // A claim in a run that is gone, or made again (by anyone), is lost: touched or not.
    std::set<std::pair<std::uint32_t, std::int64_t>> lost;
    if (result.ranges.size() > 1) {
      std::array<std::int64_t, kSlots> in_etcd{};  // each claim's create revision, 0: none
      std::string dir = prefix_ + "/slots/";
      for (const KeyValue& kv : result.ranges[1].kvs) {
        auto slot = parse_number<std::uint32_t>(std::string_view(kv.key).substr(dir.size()));
        if (slot && *slot < kSlots) in_etcd[*slot] = kv.create_revision;
      }
      for (const ClaimRun& run : runs) {
        for (std::uint32_t slot = run.first; slot <= run.last; ++slot) {
          if (in_etcd[slot] != run.revision && lost.emplace(slot, run.revision).second) {
            claims_.lost(slot, run.revision);
          }
        }
      }
    }
    for (auto it = batch.begin(); it != batch.end();) {
      bool touches_lost = std::any_of(it->claims.begin(), it->claims.end(),
                                      [&](const auto& c) { return lost.contains(c); });
      if (touches_lost) {
        refused.push_back(std::move(*it));
        it = batch.erase(it);
      } else {
        ++it;
      }
    }
    if (!moved && lost.empty()) {
      // Neither explains the failure: read everything again before writing.
      fail(Status(errc::uncertain, "an etcd transaction failed its compare for no known reason"));
      healthy_.store(false);
      refuse(batch);
    }
    if (!refused.empty()) refuse(refused);
  }
}

// ---- The event sink: one watch on P/events/ ----

bool EtcdLedger::deliver(std::vector<Event>& events, bool trimmed_gap_ok) {
  Revision delivered = delivered_.load();
  std::erase_if(events, [&](const Event& e) { return e.revision <= delivered; });
  if (events.empty()) return true;
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.revision < b.revision; });
  Events group;
  bool gap = false;
  for (Event& e : events) {
    Revision expected = group.empty() ? delivered + 1 : group.back().revision + 1;
    if (e.revision < expected) continue;  // seen twice
    if (e.revision > expected && !trimmed_gap_ok) {
      gap = true;
      break;
    }
    group.push_back(std::move(e));
  }
  events.clear();
  if (group.empty()) return !gap;
  if (group.front().revision > delivered + 1) {
    spdlog::warn("cluster ledger: events {} to {} were trimmed before this node read them",
                 delivered + 1, group.front().revision - 1);
  }
  announced_.store(group.back().revision);
  EventSink sink;
  {
    std::lock_guard lock(mutex_);
    sink = sink_;
  }
  if (sink) {
    std::vector<const Events*> list{&group};
    sink(list);
  }
  {
    std::lock_guard lock(mutex_);
    delivered_.store(group.back().revision);
  }
  delivered_cv_.notify_all();
  return !gap;
}

Status EtcdLedger::catch_up(std::int64_t& etcd_revision) {
  std::vector<Event> events;
  etcd_revision = 0;
  for (;;) {
    std::int64_t read_at = 0;
    Status status = read_events(delivered_.load() + 1, kPage, events, read_at);
    if (!status.ok()) return status;
    // The watch goes on after the first read: later pages' events come again and are skipped.
    if (etcd_revision == 0) etcd_revision = read_at;
    bool full = events.size() == static_cast<std::size_t>(kPage);
    deliver(events, true);
    if (!full) return {};
  }
}

void EtcdLedger::watch_loop() {
  const std::string events_prefix = prefix_ + "/events/";
  std::int64_t etcd_next = start_etcd_revision_ + 1;
  bool caught_up = true;  // at the start, nothing was committed after start_etcd_revision_
  // The stream handed over events after a gap that a catch-up could not fill: they wait, and the
  // stream is reopened after a catch-up, rather than delivered with the gap (§5).
  bool gap = false;
  std::vector<Event> events;
  auto stopping = [&] {
    std::lock_guard lock(mutex_);
    return watch_stopping_;
  };
  // A stream can go quiet without an error (its member paused, or partitioned from the others).
  // The writer says so when its own events do not come back; without writes, P/rev is read
  // once a second and the stream is stalled if it stays behind for longer than the timeout.
  auto checked = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> behind_since;
  Revision behind = 0;  // a revision committed at behind_since and not delivered yet
  auto stalled = [&] {
    {
      std::lock_guard lock(mutex_);
      if (std::exchange(watch_stalled_, false)) return true;
    }
    auto now = std::chrono::steady_clock::now();
    if (behind_since && delivered_.load() >= behind) behind_since.reset();
    if (behind_since) {
      if (now - *behind_since < options_.etcd.timeout) return false;
      behind_since.reset();
      return true;
    }
    if (now - checked < std::chrono::seconds(1)) return false;
    checked = now;
    KeyValue rev;
    if (!client_->get(rev_key(), rev).ok()) return false;  // etcd is away: not the stream
    auto value = parse_number<std::uint64_t>(rev.value, 10);
    if (value && *value > delivered_.load()) {
      behind = *value;
      behind_since = now;
    }
    return false;
  };
  while (!stopping()) {
    Status status;
    if (!caught_up) {
      std::int64_t at = 0;
      status = catch_up(at);
      if (status.ok()) {
        etcd_next = at + 1;
        caught_up = true;
      }
    }
    if (status.ok()) {
      status = watch_client_->watch(
          events_prefix, prefix_end(events_prefix), etcd_next,
          [&](std::vector<WatchEvent>& changes) {
            if (gap) return;  // the stream is closing; the catch-up reads these again
            for (WatchEvent& change : changes) {
              etcd_next = change.kv.mod_revision + 1;
              if (change.deleted || change.kv.key.size() < 16) continue;  // trimmed
              if (auto first = event_revision(change.kv.key)) {
                decode_events(change.kv.value, *first, events);
              }
            }
            if (events.empty()) return;
            Revision first = std::min_element(events.begin(), events.end(), [](auto& a, auto& b) {
                               return a.revision < b.revision;
                             })->revision;
            if (first > delivered_.load() + 1) {
              // Events this watch did not see (before it started, or lost): read them first.
              std::int64_t at = 0;
              if (Status s = catch_up(at); !s.ok()) fail(s);
            }
            if (!deliver(events)) gap = true;
          },
          [&] {
            if (gap) return false;  // asked again before it reopens: false until it returns
            if (!stalled()) return !stopping();
            // Its member may be paused: reopen it where the writer's calls succeed.
            caught_up = false;
            watch_client_->prefer(client_->current_endpoint());
            return false;
          });
      if (std::exchange(gap, false)) caught_up = false;
    }
    if (!status.ok()) {
      fail(status);
      caught_up = false;
      std::unique_lock lock(mutex_);
      delivered_cv_.wait_for(lock, kRetryEvery);
    }
  }
}

// ---- Reads ----

Status EtcdLedger::load(std::string_view key, LoadedState& loaded) const {
  if (unfenced_.load()) {
    return Status(errc::uncertain, "an etcd write's outcome is not known yet");
  }
  std::uint32_t slot = slot_of(key);
  if (auto claim = claims_.claim_revision(slot);
      claim && known_rows_.surely_absent(slot, *claim, fnv1a_64(key))) {
    loaded = LoadedState{};
    return {};
  }
  KeyValue kv;
  Status status = client_->get(lease_key(key), kv);
  if (!status.ok()) return status;
  loaded = kv.create_revision == 0 ? LoadedState{} : decode_or_quarantine(kv.value, revision());
  return {};
}

Status EtcdLedger::scan_range(const std::string& begin, const std::string& end,
                              const std::function<void(KeyValue&)>& visit) const {
  RangeRequest request;
  request.key = begin;
  request.range_end = end;
  request.limit = kPage;
  for (;;) {
    RangeResult result;
    Status status = client_->range(request, result);
    if (!status.ok()) return status;
    request.revision = result.revision;  // every page as of the first one
    for (KeyValue& kv : result.kvs) visit(kv);
    if (!result.more || result.kvs.empty()) return {};
    request.key = successor(result.kvs.back().key);
  }
}

Status EtcdLedger::scan_slot(std::uint32_t slot,
                             const std::function<void(std::string, LoadedState)>& visit) const {
  std::string dir = prefix_ + "/leases/" + slot_dir(slot) + "/";
  Revision now = revision();
  std::optional<std::int64_t> claim = claims_.claim_revision(slot);
  if (claim) known_rows_.scan_started(slot, *claim);
  std::vector<std::uint64_t> hashes;
  Status status = scan_range(dir, prefix_end(dir), [&](KeyValue& kv) {
    std::string key = kv.key.substr(dir.size());
    hashes.push_back(fnv1a_64(key));
    LoadedState loaded = decode_or_quarantine(kv.value, now);
    if (needs_recovery(loaded)) visit(std::move(key), std::move(loaded));
  });
  if (status.ok() && claim) known_rows_.scan_done(slot, *claim, hashes);
  return status;
}

Status EtcdLedger::scan_leases(const std::function<void(std::string, LoadedState)>& visit) const {
  for (std::uint32_t slot : claims_.owned()) {
    Status status = scan_slot(slot, visit);
    if (!status.ok()) return status;
  }
  return {};
}

Status EtcdLedger::list(std::string_view prefix, std::string_view after, std::size_t limit,
                        Millis now, std::vector<LeaseRow>& rows, bool& more) const {
  rows.clear();
  more = false;
  // Rows are kept by slot: each slot is read in key order from the bound on, in one read-only
  // transaction per round (one snapshot), until it has limit + 1 live rows or none left.
  std::string from =
      after.empty() || std::string_view(prefix) > after ? std::string(prefix) : successor(after);
  struct Cursor {
    std::string dir, next, end;
    std::size_t live = 0;
  };
  std::vector<Cursor> open;
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
    std::string dir = prefix_ + "/leases/" + slot_dir(slot) + "/";
    open.push_back(Cursor{dir, dir + from, prefix_end(dir + std::string(prefix)), 0});
  }
  std::vector<LeaseRow> found;
  while (!open.empty()) {
    EtcdTxn txn;
    for (const Cursor& c : open) {
      txn.range(c.next, c.end, static_cast<std::int64_t>(limit - c.live + 1));
    }
    EtcdTxnResult result;
    Status status = client_->txn(txn, result);
    if (!status.ok()) return status;
    if (result.ranges.size() != open.size()) return Status(errc::rejected, "etcd: short answer");
    std::vector<Cursor> again;
    for (std::size_t i = 0; i < open.size(); ++i) {
      Cursor& c = open[i];
      RangeResult& range = result.ranges[i];
      for (KeyValue& kv : range.kvs) {
        auto state = decode_state(kv.value);
        if (!state || !state->lease || !state->lease->live_at(now)) continue;
        found.push_back(LeaseRow{kv.key.substr(c.dir.size()), std::move(*state->lease)});
        ++c.live;
      }
      if (range.more && !range.kvs.empty() && c.live <= limit) {
        c.next = successor(range.kvs.back().key);
        again.push_back(std::move(c));
      }
    }
    open.swap(again);
  }
  std::sort(found.begin(), found.end(),
            [](const LeaseRow& a, const LeaseRow& b) { return a.key < b.key; });
  more = found.size() > limit;
  if (more) found.resize(limit);
  rows = std::move(found);
  return {};
}

Status EtcdLedger::history(std::string_view key, Token before_token, std::size_t limit,
                           std::vector<TenureRecord>& out, bool& more) const {
  out.clear();
  more = false;
  // One read-only transaction: the lease row and the ended tenures agree on the live tenure.
  std::string rows_prefix = tenure_key(key, 0);
  rows_prefix.resize(rows_prefix.size() - 8);  // ... KEY '\0'
  EtcdTxn txn;
  txn.range(lease_key(key), {}, 0);
  txn.range(rows_prefix,
            before_token == 0 ? prefix_end(rows_prefix) : tenure_key(key, before_token),
            static_cast<std::int64_t>(limit + 2), true);
  EtcdTxnResult result;
  Status status = client_->txn(txn, result);
  if (!status.ok()) return status;
  if (result.ranges.size() != 2) return Status(errc::rejected, "etcd: short answer");
  auto in_range = [&](Token token) { return before_token == 0 || token < before_token; };
  Token live_token = 0;
  if (!result.ranges[0].kvs.empty()) {
    auto state = decode_state(result.ranges[0].kvs[0].value);
    if (state && state->lease && in_range(state->lease->token)) {
      const Lease& lease = *state->lease;
      live_token = lease.token;
      if (limit == 0) {
        more = true;
        return {};
      }
      out.push_back(TenureRecord{
          lease.token, lease.owner, lease.acquired_at, std::nullopt, std::nullopt, {}});
    }
  }
  for (KeyValue& kv : result.ranges[1].kvs) {
    std::string_view row(kv.key);
    if (row.size() != rows_prefix.size() + 8) continue;
    Token token = from_big_endian(row.substr(rows_prefix.size()));
    if (token == live_token) continue;
    auto record = decode_tenure(kv.value, token);
    if (!record) continue;
    if (out.size() == limit) {
      more = true;
      break;
    }
    out.push_back(std::move(*record));
  }
  if (!more && result.ranges[1].more && out.size() == limit) more = true;
  return {};
}

Status EtcdLedger::events_from(Revision from, std::size_t limit, std::vector<Event>& out) const {
  std::int64_t ignored = 0;
  return read_events(from, limit, out, ignored);
}

Status EtcdLedger::read_events(Revision from, std::size_t limit, std::vector<Event>& out,
                               std::int64_t& etcd_revision) const {
  out.clear();
  if (limit == 0) return {};
  // The transaction that holds `from` starts at or below it; the ones after, above.
  std::string at = successor(event_key(from));
  EtcdTxn txn;
  txn.range(event_key(0), at, 1, true);
  txn.range(at, prefix_end(prefix_ + "/events/"), static_cast<std::int64_t>(limit));
  EtcdTxnResult result;
  Status status = client_->txn(txn, result);
  if (!status.ok()) return status;
  if (result.ranges.size() != 2) return Status(errc::rejected, "etcd: short answer");
  etcd_revision = result.revision;
  for (RangeResult& range : result.ranges) {
    for (KeyValue& kv : range.kvs) {
      if (auto first = event_revision(kv.key)) decode_events(kv.value, *first, out);
    }
  }
  std::erase_if(out, [&](const Event& e) { return e.revision < from; });
  if (out.size() > limit) out.resize(limit);
  return {};
}

std::optional<Revision> EtcdLedger::event_revision(std::string_view key) const {
  if (key.size() < 16) return std::nullopt;
  return parse_number<std::uint64_t>(key.substr(key.size() - 16), 16);
}

Status EtcdLedger::compact_history(Millis now, std::size_t& dropped) {
  dropped = 0;
  Millis cutoff = now - options_.history_max_age;
  for (std::uint32_t slot : claims_.owned()) {
    std::string dir = prefix_ + "/tenures/" + slot_dir(slot) + "/";
    std::vector<std::string> doomed;
    Status status = scan_range(dir, prefix_end(dir), [&](KeyValue& kv) {
      auto record = decode_tenure(kv.value, 0);
      if (record && record->ended_at && *record->ended_at < cutoff) {
        doomed.push_back(std::move(kv.key));
      }
    });
    if (!status.ok()) return status;
    for (std::size_t i = 0; i < doomed.size(); i += kPage) {
      EtcdTxn txn;
      for (std::size_t j = i; j < std::min(doomed.size(), i + kPage); ++j)
        txn.delete_key(doomed[j]);
      EtcdTxnResult result;
      status = client_->txn(txn, result);
      if (!status.ok()) return status;
      dropped += txn.success_ops();
    }
  }
  return {};
}

Status EtcdLedger::backup(const std::string&) const {
  return Status(errc::rejected,
                "backup is not available in cluster mode: the ledger is etcd's, back it up with "
                "`etcdctl snapshot save`");
}

}  // namespace tenure::storage
