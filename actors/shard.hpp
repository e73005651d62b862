#pragma once
// One shard of the engine (the DragonflyDB model): the keys that hash to it, their actors, their
// deadlines, their owners and their unwritten changes, touched only on the shard's strand, so
// nothing on the lease path takes a lock. A request reaches its shard as one posted message and
// runs its key's actor there; the writes of everything the shard ran in one go leave for the
// ledger as one group, and their commit comes back as one message.
#include <atomic>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/defer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/actor_ref.hpp"
#include "actors/backlog_pacer.hpp"
#include "actors/key_actor.hpp"
#include "actors/owner_index.hpp"
#include "actors/turn_gate.hpp"
#include "core/clock.hpp"
#include "core/handler_memory.hpp"
#include "core/lease.hpp"
#include "core/slot.hpp"
#include "storage/group_writer.hpp"

namespace tenure {

struct EngineCore;

class Shard {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  Shard(EngineCore& core, TurnGate& turns);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Runs `fn()` on the strand as one turn of the shard; the engine's turn gate counts it until
  // it has run. Deferred, not posted: from an io thread the turn is queued without waking
  // another thread, which the poster's own thread runs as soon as it is free (a wake-up is a
  // futex call on each side, several per request at one connection). The turn's memory is the
  // shard's (post_memory_), not the poster's thread's cache, which missed: the posting thread
  // (an io thread, the ledger's) is rarely the one that frees it, and other posts left blocks
  // of other sizes in it.
  template <typename Fn>
  void post(Fn&& fn) {
    queued_.fetch_add(1, std::memory_order_relaxed);
    posts_.fetch_add(1, std::memory_order_relaxed);
    boost::asio::defer(strand_, boost::asio::bind_allocator(
                                    HandlerAllocator<void>(*post_memory_),
                                    turns_.counted([this, fn = std::forward<Fn>(fn)]() mutable {
                                      queued_.fetch_sub(1, std::memory_order_relaxed);
                                      fn();
                                      end_turn();
                                    })));
  }

  // REQUIRES (all below): on the strand.
  // The key's actor, created (unloaded) if not resident.
  ActorRef actor(std::string_view key);
  // The resident actor, or null.
  ActorRef find(std::string_view key) const;
  // The actor has nothing to keep it since its idle mark `mark`: it stays resident while it is
  // among the shard's most recently used idle keys, and retires after.
  void went_idle(KeyActor& actor, std::uint32_t mark);
  // Wakes the actor at `at` (clock time).
  void schedule(KeyActor& actor, Millis at);
  // Wakes every actor whose deadline is due by the clock now: their expiries leave as one group.
  void fire_due();
  // Queues a key's write for the shard's next group; the actor's on_committed(seq, ...) runs
  // once the group is durable.
  void stage(KeyActor& actor, std::uint64_t seq, storage::WriteOp op);
  // Sends the staged writes now (recovery: before it reports its turn done).
  void submit_staged();
  // Queues a `lost` notice for connection `conn`; the notices of one commit go to each
  // connection in one call, at the end of the shard's turn.
  void lost(ConnId conn, Event event);
  // Sends the queued notices now: before a reply that must not overtake one.
  void send_lost();
  // A `lost` notice whose write was refused: the ledger still has the lease but not the
  // connection to tell, which the key's read-back takes from here (KeyActor::load).
  void keep_untold(std::string_view key, Token token, ConnId conn);
  // The connection kept for tenure `token` of `key`, or 0; forgets what was kept for the key.
  ConnId take_untold(std::string_view key, Token token);
  // Cluster mode: tells the connection `conn` that this node no longer tells it of `tenure`'s
  // loss (ConnectionListener::on_unowned): its slot went to another node.
  void unowned(ConnId conn, BoundTenure tenure);
  // An empty string for a key's encoded row: a committed row's buffer when one is kept.
  std::string spare_row();
  // Its actors' drained Busy parts, kept for the next ones that need one (KeyActor::busy).
  std::vector<std::unique_ptr<KeyActor::Busy>>& spare_busy() { return spare_busy_; }
  OwnerIndex& owners() { return owners_; }
  // Every resident actor.
  std::vector<ActorRef> actors() const;
  // Stops the timer; later schedule() calls are ignored.
  void stop_timer();
  // Cluster mode: whether the key's slot is adopted here (always true on a single node).
  bool serves(std::string_view key) const {
    return !cluster_ || ((slots_ >> slot_of(key)) & 1) != 0;
  }
  // Serves the slot's keys from now on.
  void adopt_slot(std::uint32_t slot) { slots_ |= std::uint64_t{1} << slot; }
  // Stops serving the slot's keys and lets their actors go, without writing (KeyActor::drop);
  // the connections bound to their leases are told (ConnectionListener::on_unowned).
  void drop_slot(std::uint32_t slot);

  // Any thread.
  std::size_t resident() const { return resident_.load(std::memory_order_relaxed); }
  std::uint64_t posts() const { return posts_.load(std::memory_order_relaxed); }

 private:
  void tell_unowned(ConnId conn, std::vector<BoundTenure> tenures);

  struct Deadline {
    Millis at;
    ActorRef actor;
    bool operator>(const Deadline& other) const { return at > other.at; }
  };
  // The actors themselves are the set's elements, looked up by their own key: the key is not
  // stored a second time, and open addressing costs no node per actor.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const;
    std::size_t operator()(const ActorRef& actor) const;
  };
  struct KeyEq {
    using is_transparent = void;
    bool operator()(const ActorRef& a, const ActorRef& b) const;
    bool operator()(std::string_view key, const ActorRef& actor) const;
    bool operator()(const ActorRef& actor, std::string_view key) const {
      return (*this)(key, actor);
    }
  };
  struct Staged {
    ActorRef actor;
    std::uint64_t seq;
  };

  struct Idle {
    ActorRef actor;
    std::uint32_t mark;
  };

  void retire(KeyActor& actor);
  // Keeps what a committed group leaves for the next groups: its vectors and its rows' buffers.
  void recycle(std::vector<Staged>& by, std::vector<storage::WriteOp>& written);
  // An empty list for the actors of the next group, with room for `size`.
  std::vector<Staged>* take_staged_by(std::size_t size);
  // The staged writes leave now if no other turn is queued on the shard (nothing to wait for),
  // else after the turns queued now: one group for the whole burst.
  void end_turn();
  void arm(Millis at);
  void drop_retired_wakes();

  EngineCore& core_;
  TurnGate& turns_;
  // Turns that never ran (a stop that gave up waiting) are destroyed with the io_context, after
  // the shard: then ~Shard leaves this memory to them rather than free it under them.
  std::unique_ptr<HandlerMemory> post_memory_;
  const Strand strand_;
  boost::unordered_flat_set<ActorRef, KeyHash, KeyEq> actors_;
  std::atomic<std::size_t> resident_{0};
  OwnerIndex owners_;
  // Idle actors, least recently used first; an entry whose actor was used again since is stale
  // (its mark is old) and skipped. At most idle_keep_ entries, stale ones included.
  std::deque<Idle> idle_;
  const std::size_t idle_keep_;

  std::vector<Deadline> deadlines_;  // a min-heap on `at`
  std::size_t retired_wakes_ = 0;    // entries of retired actors, about
  boost::asio::steady_timer timer_;
  Millis armed_at_ = 0;  // 0: not armed
  bool timer_stopped_ = false;
  BacklogPacer backlog_;
  const bool cluster_;
  std::uint64_t slots_ = 0;  // cluster mode: the adopted slots, one bit each
  static_assert(kSlots <= 64);

  // Notices for connections whose leases this turn's commits ended.
  std::vector<std::pair<ConnId, Event>> lost_;
  std::vector<std::pair<ConnId, std::size_t>> lost_order_;  // send_lost's, kept for its buffer
  // keep_untold's, by key: after refused writes only.
  std::unordered_map<std::string, std::vector<std::pair<Token, ConnId>>> untold_;
  std::vector<storage::WriteOp> staged_ops_;
  // The actors of the group being staged: one of staged_lists_, which the shard keeps so that
  // a group's commit callback carries a pointer to its list, not the list (which allocated).
  std::vector<Staged>* staged_by_ = nullptr;
  std::vector<std::unique_ptr<std::vector<Staged>>> staged_lists_;
  // Emptied by committed groups, for the next ones (a few groups may be in flight at once).
  std::vector<std::vector<storage::WriteOp>> spare_ops_;
  std::vector<std::vector<Staged>*> spare_by_;
  std::vector<std::string> spare_rows_;
  std::vector<std::unique_ptr<KeyActor::Busy>> spare_busy_;
  bool flush_posted_ = false;
  std::atomic<std::size_t> queued_{0};  // turns posted and not yet begun
  std::atomic<std::uint64_t> posts_{0};
};

}  // namespace tenure
