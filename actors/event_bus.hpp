#pragma once
// Publishes committed events, in revision order, to subscribers (watchers). Publishing runs on
// the ledger's writer thread, so a subscriber must only queue and return: a slow subscriber is
// its own problem (it lags), never the leases'.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/lease.hpp"

namespace tenure {

class EventSubscriber {
 public:
  virtual ~EventSubscriber() = default;
  // Called with consecutive committed events; never blocks.
  virtual void on_events(const std::vector<Event>& events) = 0;
};

class EventBus {
 public:
  void subscribe(std::shared_ptr<EventSubscriber> subscriber);
  void unsubscribe(const EventSubscriber* subscriber);
  void publish(const std::vector<Event>& events);
  std::size_t subscribers() const;
  std::uint64_t published() const { return published_.load(); }

 private:
  using List = std::vector<std::shared_ptr<EventSubscriber>>;
  mutable std::mutex mutex_;  // guards swaps of the list, not publishing
  std::shared_ptr<const List> list_ = std::make_shared<List>();
  std::atomic<std::uint64_t> published_{0};
};

}  // namespace tenure
