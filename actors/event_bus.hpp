#pragma once
// Publishes committed events, in revision order, to subscribers (watchers). Publishing runs on
// the ledger's commit thread, so a subscriber must only queue and return: a slow subscriber is
// its own problem (it lags), never the leases'.
//
// Subscribers are grouped by filter: each batch is filtered once per distinct key or prefix,
// and every subscriber of a group gets the same immutable batch (no copy per subscriber). The
// groups are rebuilt at the first publish after subscriptions changed, so a thousand new watches
// cost one rebuild, not a thousand copies of the list.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/lease.hpp"

namespace tenure {

// Events shared, unchanged, by every subscriber that gets them.
using EventBatch = std::shared_ptr<const std::vector<Event>>;

struct WatchFilter {
  std::string prefix;              // byte prefix; empty: every key
  std::optional<std::string> key;  // exact key instead of a prefix
  bool matches(const Event& event) const;
};

class EventSubscriber {
 public:
  virtual ~EventSubscriber() = default;
  // Called with the committed events that match the subscriber's filter, in revision order;
  // never blocks. `events` is never empty.
  virtual void on_events(const EventBatch& events) = 0;
  // Events before `resume_from` were lost to the bus (a cluster node read past events trimmed
  // before it read them): the subscriber was dropped and gets no more events.
  virtual void on_gap(Revision resume_from) = 0;
};

class EventBus {
 public:
  void subscribe(std::shared_ptr<EventSubscriber> subscriber, WatchFilter filter = {});
  void unsubscribe(const EventSubscriber* subscriber);
  // The revision published last before publishing begins; REQUIRES: no publish yet.
  void published_through(Revision revision) { next_ = revision + 1; }
  // The events of one commit, in revision order, in parts (one per op); copied once, into one
  // shared batch, and only if somebody subscribes. Events that do not follow the last published
  // ones drop every subscriber (on_gap) before they are published: a watch never skips.
  void publish(const std::vector<const Events*>& parts);
  std::size_t subscribers() const { return count_.load(std::memory_order_relaxed); }
  std::uint64_t published() const { return published_.load(); }

 private:
  struct Group {
    WatchFilter filter;
    std::vector<std::shared_ptr<EventSubscriber>> members;
  };
  struct Entry {
    std::shared_ptr<EventSubscriber> subscriber;
    WatchFilter filter;
  };
  using Groups = std::vector<Group>;

  // REQUIRES: mutex_ held.
  void regroup();
  void drop_all(Revision resume_from);

  mutable std::mutex mutex_;  // guards the subscribers and swaps of the groups, not publishing
  std::unordered_map<const EventSubscriber*, Entry> entries_;
  bool changed_ = false;
  std::shared_ptr<const Groups> groups_ = std::make_shared<Groups>();
  std::atomic<std::size_t> count_{0};
  std::atomic<std::uint64_t> published_{0};
  Revision next_ = 0;  // the revision the next publish starts at; 0: unknown. Publisher's only.
};

}  // namespace tenure
