#pragma once
// One watch of a connection (§3, §5). It is the engine's sink for the watch's events and hands
// them to the connection's strand without ever blocking the ledger's commit thread. It also
// keeps the lag bound: once more than --watch-queue of its events are on their way to the
// client (posted to the strand, or queued and not yet written), the watch gets no more events
// from the first one that did not fit on, and the connection tells the client `lagged` with
// that revision to resume from.
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "actors/watch.hpp"

namespace tenure {

class Conversation;

class Subscription final : public WatchSink, public std::enable_shared_from_this<Subscription> {
 public:
  Subscription(std::weak_ptr<Conversation> owner, std::size_t bound);

  // The engine's side: any thread, never concurrently for one watch.
  void on_watch_events(std::uint64_t watch_id, const EventBatch& events) override;
  void on_watch_compacted(std::uint64_t watch_id, Revision oldest) override;
  void on_watch_failed(std::uint64_t watch_id, Revision resume_from,
                       const std::string& message) override;

  // Any thread: a replay reads no more than this (WatchSink::room).
  std::size_t room() const override;
  bool drained() const override { return unwritten_.load() == 0; }

  // The connection's strand: `events` of its events left; a replay waiting for room goes on.
  void written(std::size_t events);
  // The first revision the watch does not get, once it lags.
  bool lagging() const { return cutoff() != kNoCutoff; }
  Revision cutoff() const { return cutoff_.load(); }
  // The watch gets no events from `revision` on.
  void cut_at(Revision revision);

  // The connection's side, on its strand.
  std::shared_ptr<Watch> watch;
  bool ended = false;  // unwatched, lagged, compacted, or the connection closed

 private:
  static constexpr Revision kNoCutoff = std::numeric_limits<Revision>::max();

  const std::weak_ptr<Conversation> owner_;
  const std::size_t bound_;
  std::atomic<std::size_t> unwritten_{0};
  std::atomic<Revision> cutoff_{kNoCutoff};
};

// The watch events in one buffer of outgoing messages, by subscription: once the buffer is
// written, each subscription learns how many of its events left.
class EventsInBuffer {
 public:
  void add(const std::shared_ptr<Subscription>& subscription);
  void written();

 private:
  std::vector<std::pair<std::shared_ptr<Subscription>, std::size_t>> counts_;
};

}  // namespace tenure
