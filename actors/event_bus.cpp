#include "actors/event_bus.hpp"

#include <spdlog/spdlog.h>

#include <map>

namespace tenure {

bool WatchFilter::matches(const Event& event) const {
  if (key) return event.key == *key;
  return std::string_view(event.key).starts_with(prefix);
}

void EventBus::subscribe(std::shared_ptr<EventSubscriber> subscriber, WatchFilter filter) {
  std::lock_guard lock(mutex_);
  const EventSubscriber* at = subscriber.get();
  if (entries_.insert_or_assign(at, Entry{std::move(subscriber), std::move(filter)}).second) {
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  changed_ = true;
}

void EventBus::unsubscribe(const EventSubscriber* subscriber) {
  std::lock_guard lock(mutex_);
  if (entries_.erase(subscriber) == 0) return;
  count_.fetch_sub(1, std::memory_order_relaxed);
  changed_ = true;
}

void EventBus::regroup() {
  // Keyed by kind and text, so a key watch and a prefix watch of the same text stay apart.
  std::map<std::pair<bool, std::string_view>, Group> by_filter;
  for (const auto& [at, entry] : entries_) {
    const WatchFilter& f = entry.filter;
    Group& group = by_filter[{f.key.has_value(), f.key ? *f.key : f.prefix}];
    if (group.members.empty()) group.filter = f;
    group.members.push_back(entry.subscriber);
  }
  auto groups = std::make_shared<Groups>();
  groups->reserve(by_filter.size());
  for (auto& [name, group] : by_filter) groups->push_back(std::move(group));
  groups_ = std::move(groups);
  changed_ = false;
}

void EventBus::drop_all(Revision resume_from) {
  std::unordered_map<const EventSubscriber*, Entry> dropped;
  {
    std::lock_guard lock(mutex_);
    dropped.swap(entries_);
    count_.store(0, std::memory_order_relaxed);
    changed_ = true;
  }
  if (dropped.empty()) return;
  spdlog::warn("events before revision {} never reached the watches: {} watch(es) end compacted",
               resume_from, dropped.size());
  for (auto& [at, entry] : dropped) entry.subscriber->on_gap(resume_from);
}

void EventBus::publish(const std::vector<const Events*>& parts) {
  const Events* first = nullptr;
  const Events* last = nullptr;
  for (const Events* part : parts) {
    if (part->empty()) continue;
    if (!first) first = part;
    last = part;
  }
  if (first) {
    Revision from = first->front().revision;
    if (next_ != 0 && from > next_) drop_all(from);
    next_ = last->back().revision + 1;
  }
  std::shared_ptr<const Groups> groups;
  {
    std::lock_guard lock(mutex_);
    if (changed_) regroup();
    groups = groups_;
  }
  std::size_t count = 0;
  for (const Events* part : parts) count += part->size();
  published_.fetch_add(count);
  if (groups->empty() || count == 0) return;
  auto events = std::make_shared<std::vector<Event>>();
  events->reserve(count);
  for (const Events* part : parts) events->insert(events->end(), part->begin(), part->end());
  std::shared_ptr<const std::vector<Event>> all = std::move(events);
  for (const Group& group : *groups) {
    EventBatch batch = all;
    if (group.filter.key || !group.filter.prefix.empty()) {
      std::vector<Event> matching;
      for (const Event& e : *all) {
        if (group.filter.matches(e)) matching.push_back(e);
      }
      if (matching.empty()) continue;
      if (matching.size() < all->size()) {
        batch = std::make_shared<const std::vector<Event>>(std::move(matching));
      }
    }
    for (const auto& member : group.members) member->on_events(batch);
  }
}

}  // namespace tenure
