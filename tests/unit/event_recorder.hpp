#pragma once
// Collects the events the engine publishes, for assertions.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "actors/event_bus.hpp"

namespace tenure::test {

class EventRecorder : public EventSubscriber {
 public:
  void on_events(const EventBatch& events) override {
    std::lock_guard lock(mutex_);
    events_.insert(events_.end(), events->begin(), events->end());
    changed_.notify_all();
  }
  void on_gap(Revision) override {}
  std::vector<Event> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // Waits until an event of `type` on `key` was seen; false after `timeout`.
  bool wait_for(EventType type, const std::string& key, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] {
      for (const Event& e : events_) {
        if (e.type == type && e.key == key) return true;
      }
      return false;
    });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Event> events_;
};

}  // namespace tenure::test
