#pragma once
// A watch: committed events for a key or a key prefix, optionally replayed from a past revision
// out of the ledger's event log first, then live, with no gap and no duplicate at the seam (§3
// watch, §5). The sink is the transport's; it must only queue and return.
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/event_bus.hpp"

namespace tenure {

struct EngineCore;

class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // Matching events, in strictly increasing revision order. Called from the ledger's writer
  // thread or an io thread, never concurrently for one watch.
  // The batch may be shared with other watches; it is never empty.
  virtual void on_watch_events(std::uint64_t watch_id, const EventBatch& events) = 0;
  // The watch asked for revisions the ledger no longer keeps; it is cancelled.
  virtual void on_watch_compacted(std::uint64_t watch_id, Revision oldest) = 0;
  // The replay could not read the ledger from `resume_from` on (§6: never a gap); it is
  // cancelled, having delivered every matching event before `resume_from`.
  virtual void on_watch_failed(std::uint64_t watch_id, Revision resume_from,
                               const std::string& message) = 0;
  // How many more events it takes now without falling behind its bound. A replay reads no more
  // than this at a time, and at 0 waits for Watch::room_freed(): the log is read at the pace the
  // client reads, so a replay longer than the bound does not lag a client that keeps reading.
  // Any thread.
  virtual std::size_t room() const { return std::numeric_limits<std::size_t>::max(); }
  // Whether every event handed to it has been written. A replay that caught up with the log goes
  // live only then: live events find the whole bound free, as a new watch's do, and those that
  // come while the client still reads the replay are read from the log as it reads. Any thread.
  virtual bool drained() const { return true; }
};

class Watch : public EventSubscriber, public std::enable_shared_from_this<Watch> {
 public:
  Watch(std::uint64_t id, WatchFilter filter, std::weak_ptr<WatchSink> sink);

  std::uint64_t id() const { return id_; }
  // Subscribes to the engine's bus and, with `from`, replays its ledger from there in turns on
  // its io threads. Returns the server's current revision, for the `watching` reply.
  Revision start(EngineCore& core, std::optional<Revision> from);
  // No more events after this returns (save ones already handed to the sink).
  void cancel(EventBus& bus);

  void on_events(const EventBatch& events) override;
  void on_gap(Revision resume_from) override;
  // The sink has room again: a replay waiting for it goes on. Any thread.
  void room_freed();

 private:
  void replay(EngineCore& core, Revision next);
  // The replay waits at `next` for room_freed(). REQUIRES: mutex_ held.
  void wait_at(Revision next);
  void post_replay(EngineCore& core, Revision next);
  // Hands the sink what it has not had yet. REQUIRES: mutex_ held; `events` match the filter.
  void deliver(const EventBatch& events);

  const std::uint64_t id_;
  const WatchFilter filter_;
  const std::weak_ptr<WatchSink> sink_;
  std::mutex mutex_;
  bool replaying_ = false;
  bool cancelled_ = false;
  Revision delivered_ = 0;  // the last revision handed to the sink
  // Live events that arrived during the replay, at most kBufferedBound: an overflowing buffer is
  // dropped, since what it held is in the log, and the replay reads on through dropped_through_.
  std::vector<Event> buffered_;
  Revision dropped_through_ = 0;
  EngineCore* core_ = nullptr;          // set by start(); outlives the watch's turns
  std::optional<Revision> waiting_at_;  // a replay waiting for room, to go on from there
  std::atomic<bool> waiting_{false};    // waiting_at_ is set: room_freed()'s quick test
};

}  // namespace tenure
