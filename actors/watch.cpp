#include "actors/watch.hpp"

#include <boost/asio/post.hpp>

#include "actors/engine_core.hpp"

namespace tenure {
namespace {

// Events read from the ledger per turn of a replay, so that one long replay does not hold an
// io thread for long.
constexpr std::size_t kReplayChunk = 1024;
// Live events a replaying watch keeps at most; past it they are read from the log instead.
constexpr std::size_t kBufferedBound = 16 * kReplayChunk;

}  // namespace

Watch::Watch(std::uint64_t id, WatchFilter filter, std::weak_ptr<WatchSink> sink)
    : id_(id), filter_(std::move(filter)), sink_(std::move(sink)) {}

Revision Watch::start(EngineCore& core, std::optional<Revision> from) {
  core_ = &core;
  EventBus& bus = core.bus;
  const storage::LedgerStore& ledger = *core.ledger;
  {
    std::lock_guard lock(mutex_);
    replaying_ = from.has_value();
  }
  // Subscribe first: anything committed from now on is buffered, anything before is in the log.
  bus.subscribe(shared_from_this(), filter_);
  Revision current = ledger.revision();
  if (!from) {
    std::lock_guard lock(mutex_);
    delivered_ = current;
    return current;
  }
  Revision first = std::max<Revision>(*from, 1);
  Revision oldest = std::max<Revision>(ledger.oldest_revision(), 1);
  if (first < oldest) {
    bus.unsubscribe(this);
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    if (auto sink = sink_.lock()) sink->on_watch_compacted(id_, oldest);
    return current;
  }
  {
    std::lock_guard lock(mutex_);
    delivered_ = first - 1;
  }
  post_replay(core, first);
  return current;
}

void Watch::post_replay(EngineCore& core, Revision next) {
  boost::asio::post(core.io, core.turns.counted([self = shared_from_this(), &core, next] {
    self->replay(core, next);
  }));
}

void Watch::replay(EngineCore& core, Revision next) {
  auto sink = sink_.lock();
  std::size_t room = sink ? sink->room() : 0;
  if (room == 0) {
    {
      std::lock_guard lock(mutex_);
      if (cancelled_ || !sink) return;
      wait_at(next);
    }
    // Room freed before waiting_ was set found nothing to resume: look again.
    if (sink->room() > 0) room_freed();
    return;
  }
  // Every event read is delivered or filtered out, so a read of `room` events fits.
  const std::size_t asked = std::min(kReplayChunk, room);
  std::vector<Event> chunk;
  storage::Status status = core.ledger->events_from(next, asked, chunk);
  std::unique_lock lock(mutex_);
  if (cancelled_) return;
  // Events dropped from the buffer were committed before they were published: a log without
  // them has lost them, and a watch must never skip.
  if (status.ok() && chunk.empty() && next <= dropped_through_) {
    status = storage::Status(storage::errc::corruption, "events up to revision " +
                                                            std::to_string(dropped_through_) +
                                                            " are missing from the event log");
  }
  // Trimmed while this watch read more slowly than the log grew: ended as one that started
  // too far back, never with a gap. (The jump before a `recovered` event is no trim: no event
  // was ever there, and that event says what happened.)
  const bool recovery_jump = status.ok() && !chunk.empty() &&
                             chunk.front().type == EventType::recovered &&
                             core.ledger->oldest_revision() <= next;
  if (status.ok() && !chunk.empty() && chunk.front().revision > next && !recovery_jump) {
    cancelled_ = true;
    buffered_.clear();
    lock.unlock();
    core.bus.unsubscribe(this);
    Revision oldest = std::max(core.ledger->oldest_revision(), chunk.front().revision);
    if (auto sink = sink_.lock()) sink->on_watch_compacted(id_, oldest);
    return;
  }
  if (!status.ok()) {
    cancelled_ = true;
    buffered_.clear();
    lock.unlock();
    core.bus.unsubscribe(this);
    if (auto sink = sink_.lock()) {
      sink->on_watch_failed(id_, next, "cannot read the ledger: " + status.message());
    }
    return;
  }
  Revision first_buffered = buffered_.empty() ? 0 : buffered_.front().revision;
  auto older = std::make_shared<std::vector<Event>>();
  bool read_to_buffer = false;
  for (Event& e : chunk) {
    if (first_buffered != 0 && e.revision >= first_buffered) {
      read_to_buffer = true;
      break;
    }
    // Every event read counts as seen, matching or not, so the seam's dedup holds.
    next = e.revision + 1;
    if (filter_.matches(e)) older->push_back(std::move(e));
  }
  deliver(older);
  // More to read: a full chunk short of the buffer, or events dropped from the buffer not read
  // yet (they were committed, so the log has them).
  bool log_has_more = (chunk.size() == asked && !read_to_buffer) || next <= dropped_through_;
  if (!log_has_more && !buffered_.empty() && buffered_.size() > sink->room()) {
    // The seam would overfill the sink: what was buffered is read from the log instead, as the
    // sink makes room.
    dropped_through_ = std::max(dropped_through_, buffered_.back().revision);
    buffered_ = {};
    log_has_more = true;
  }
  if (log_has_more) {
    post_replay(core, next);
    return;
  }
  if (!sink->drained()) {
    wait_at(next);
    lock.unlock();
    if (sink->drained()) room_freed();  // as for room above
    return;
  }
  // The seam: what was buffered follows what was read, minus what both saw.
  deliver(std::make_shared<const std::vector<Event>>(std::move(buffered_)));
  buffered_ = {};
  replaying_ = false;
}

void Watch::on_events(const EventBatch& events) {
  std::lock_guard lock(mutex_);
  if (cancelled_) return;
  if (replaying_) {
    if (buffered_.size() + events->size() > kBufferedBound) {
      dropped_through_ = events->back().revision;
      buffered_ = {};
      return;
    }
    buffered_.insert(buffered_.end(), events->begin(), events->end());
    return;
  }
  deliver(events);
}

void Watch::wait_at(Revision next) {
  waiting_at_ = next;
  waiting_.store(true);
}

void Watch::room_freed() {
  if (!waiting_.load()) return;
  Revision next = 0;
  {
    std::lock_guard lock(mutex_);
    if (!waiting_at_ || cancelled_) return;
    next = *waiting_at_;
    waiting_at_.reset();
    waiting_.store(false);
  }
  post_replay(*core_, next);
}

void Watch::on_gap(Revision resume_from) {
  {
    std::lock_guard lock(mutex_);
    if (cancelled_) return;
    cancelled_ = true;
    buffered_.clear();
  }
  if (auto sink = sink_.lock()) sink->on_watch_compacted(id_, resume_from);
}

void Watch::deliver(const EventBatch& events) {
  if (events->empty() || events->back().revision <= delivered_) return;
  EventBatch fresh = events;
  if (events->front().revision <= delivered_) {
    auto rest = std::make_shared<std::vector<Event>>();
    for (const Event& e : *events) {
      if (e.revision > delivered_) rest->push_back(e);
    }
    fresh = std::move(rest);
  }
  delivered_ = fresh->back().revision;
  if (auto sink = sink_.lock()) sink->on_watch_events(id_, fresh);
}

void Watch::cancel(EventBus& bus) {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  bus.unsubscribe(this);
}

}  // namespace tenure
