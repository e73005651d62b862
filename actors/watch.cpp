#include "actors/watch.hpp"

#include <boost/asio/post.hpp>

#include "actors/engine_core.hpp"

namespace tenure {
namespace {

// Events read from the ledger per turn of a replay, so that one long replay does not hold an
// io thread for long.
constexpr std::size_t kReplayChunk = 1024;

}  // namespace

bool WatchFilter::matches(const Event& event) const {
  if (key) return event.key == *key;
  return std::string_view(event.key).starts_with(prefix);
}

Watch::Watch(std::uint64_t id, WatchFilter filter, std::weak_ptr<WatchSink> sink)
    : id_(id), filter_(std::move(filter)), sink_(std::move(sink)) {}

Revision Watch::start(EngineCore& core, std::optional<Revision> from) {
  EventBus& bus = core.bus;
  const storage::Ledger& ledger = *core.ledger;
  {
    std::lock_guard lock(mutex_);
    replaying_ = from.has_value();
  }
  // Subscribe first: anything committed from now on is buffered, anything before is in the log.
  bus.subscribe(shared_from_this());
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
  std::vector<Event> chunk;
  storage::Status status = core.ledger->events_from(next, kReplayChunk, chunk);
  std::unique_lock lock(mutex_);
  if (cancelled_) return;
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
  std::vector<Event> older;
  for (Event& e : chunk) {
    if (first_buffered != 0 && e.revision >= first_buffered) break;
    older.push_back(std::move(e));
  }
  deliver(older);
  bool log_has_more = chunk.size() == kReplayChunk && older.size() == chunk.size();
  if (log_has_more) {
    post_replay(core, delivered_ + 1);
    return;
  }
  // The seam: what was buffered follows what was read, minus what both saw.
  deliver(buffered_);
  buffered_.clear();
  buffered_.shrink_to_fit();
  replaying_ = false;
}

void Watch::on_events(const std::vector<Event>& events) {
  std::lock_guard lock(mutex_);
  if (cancelled_) return;
  if (replaying_) {
    buffered_.insert(buffered_.end(), events.begin(), events.end());
    return;
  }
  deliver(events);
}

void Watch::deliver(const std::vector<Event>& events) {
  std::vector<Event> matching;
  for (const Event& e : events) {
    if (e.revision <= delivered_) continue;
    delivered_ = e.revision;
    if (filter_.matches(e)) matching.push_back(e);
  }
  if (matching.empty()) return;
  if (auto sink = sink_.lock()) sink->on_watch_events(id_, matching);
}

void Watch::cancel(EventBus& bus) {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  bus.unsubscribe(this);
}

}  // namespace tenure
