#include "transports/subscription.hpp"

#include <boost/asio/post.hpp>

#include "transports/conversation.hpp"

namespace tenure {

Subscription::Subscription(std::weak_ptr<Conversation> owner, std::size_t bound)
    : owner_(std::move(owner)), bound_(bound) {}

// Only this function adds to unwritten_ and the strand only subtracts, so the room it sees is
// never more than there is.
void Subscription::on_watch_events(std::uint64_t, const EventBatch& batch) {
  auto owner = owner_.lock();
  const std::vector<Event>& events = *batch;
  if (!owner || events.empty()) return;
  if (events.front().revision >= cutoff()) {
    owner->context_.metrics.events_dropped.fetch_add(events.size(), std::memory_order_relaxed);
    return;
  }
  std::size_t queued = unwritten_.load();
  std::size_t fit = std::min(events.size(), queued < bound_ ? bound_ - queued : 0);
  if (fit > 0) {
    unwritten_.fetch_add(fit);
    // The batch is shared with the other watches that got it; only a cut one is copied.
    EventBatch part = fit == events.size()
                          ? batch
                          : std::make_shared<const std::vector<Event>>(
                                events.begin(), events.begin() + static_cast<std::ptrdiff_t>(fit));
    boost::asio::post(owner->strand_, [owner, self = shared_from_this(), part = std::move(part)] {
      owner->deliver(self, *part);
    });
  }
  if (fit == events.size()) return;
  owner->context_.metrics.events_dropped.fetch_add(events.size() - fit, std::memory_order_relaxed);
  cut_at(events[fit].revision);
  boost::asio::post(owner->strand_,
                    [owner, self = shared_from_this()] { owner->report_lag(self); });
}

std::size_t Subscription::room() const {
  if (lagging()) return 0;
  std::size_t queued = unwritten_.load();
  return queued < bound_ ? bound_ - queued : 0;
}

void Subscription::written(std::size_t events) {
  unwritten_.fetch_sub(events);
  if (watch) watch->room_freed();
}

void Subscription::on_watch_compacted(std::uint64_t, Revision oldest) {
  auto owner = owner_.lock();
  if (!owner) return;
  boost::asio::post(owner->strand_, [owner, self = shared_from_this(), oldest] {
    owner->report_compacted(self, oldest);
  });
}

void Subscription::on_watch_failed(std::uint64_t, Revision resume_from,
                                   const std::string& message) {
  auto owner = owner_.lock();
  if (!owner) return;
  boost::asio::post(owner->strand_, [owner, self = shared_from_this(), resume_from, message] {
    owner->report_failed(self, resume_from, message);
  });
}

void Subscription::cut_at(Revision revision) {
  Revision current = cutoff_.load();
  while (revision < current && !cutoff_.compare_exchange_weak(current, revision)) {
  }
}

void EventsInBuffer::add(const std::shared_ptr<Subscription>& subscription) {
  if (!counts_.empty() && counts_.back().first == subscription) {
    ++counts_.back().second;
  } else {
    counts_.emplace_back(subscription, 1);
  }
}

void EventsInBuffer::written() {
  for (auto& [subscription, count] : counts_) subscription->written(count);
  counts_.clear();
}

}  // namespace tenure
