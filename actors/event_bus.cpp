#include "actors/event_bus.hpp"

#include <algorithm>

namespace tenure {

void EventBus::subscribe(std::shared_ptr<EventSubscriber> subscriber) {
  std::lock_guard lock(mutex_);
  auto next = std::make_shared<List>(*list_);
  next->push_back(std::move(subscriber));
  list_ = std::move(next);
}

void EventBus::unsubscribe(const EventSubscriber* subscriber) {
  std::lock_guard lock(mutex_);
  auto next = std::make_shared<List>(*list_);
  std::erase_if(*next, [&](const auto& s) { return s.get() == subscriber; });
  list_ = std::move(next);
}

void EventBus::publish(const std::vector<Event>& events) {
  std::shared_ptr<const List> list;
  {
    std::lock_guard lock(mutex_);
    list = list_;
  }
  published_.fetch_add(events.size());
  for (const auto& s : *list) s->on_events(events);
}

std::size_t EventBus::subscribers() const {
  std::lock_guard lock(mutex_);
  return list_->size();
}

}  // namespace tenure
