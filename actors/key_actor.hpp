#pragma once
// One key's actor: the only place where that key's lease state changes. Every method posts a
// message to the actor's strand; the state machine runs there, the change goes to the ledger's
// group writer, and replies leave in request order once their change is durable.
#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actors/actor_ref.hpp"
#include "actors/requests.hpp"
#include "storage/ledger.hpp"

namespace tenure {

struct EngineCore;

// The key's bytes live right after the object, in the same allocation (see create).
class KeyActor {
 public:
  // A new, unloaded actor running on the registry's strand number `strand`.
  static ActorRef create(EngineCore& core, std::string_view key, std::uint16_t strand);
  KeyActor(const KeyActor&) = delete;
  KeyActor& operator=(const KeyActor&) = delete;

  std::string_view key() const {
    return {reinterpret_cast<const char*>(this) + sizeof(KeyActor), key_size_};
  }

  // Each message consumes one reference taken by Registry::ref/find_ref.
  void post_acquire(AcquireRequest request, Reply<AcquireResult> reply);
  void post_renew(RenewRequest request, Reply<HolderResult> reply);
  void post_release(ReleaseRequest request, Reply<HolderResult> reply);
  void post_revoke(RevokeRequest request, Reply<HolderResult> reply);
  void post_check(CheckRequest request, Reply<HolderResult> reply);
  void post_get(GetRequest request, Reply<GetResult> reply);
  void post_history(HistoryRequest request, Reply<HistoryResult> reply);
  void post_disconnect(ConnId conn);
  // `turn_done` is called once the recovery turn has handed its writes to the ledger.
  void post_recover(storage::LoadedState loaded, std::function<void()> turn_done);
  void post_shutdown();
  // From the registry's timer; holds no reference.
  void post_wake(Millis at);

  std::atomic<std::uint32_t> refs{0};
  // Read off the strand by the registry's timers; set once, on the strand.
  bool retired() const { return retired_.load(std::memory_order_acquire); }

 private:
  friend void intrusive_ptr_add_ref(KeyActor* actor);
  friend void intrusive_ptr_release(KeyActor* actor);
  KeyActor(EngineCore& core, std::size_t key_size, std::uint16_t strand);
  ~KeyActor() = default;

  struct PendingReply {
    std::uint64_t seq = 0;  // the write this reply waits for
    int event_index = -1;   // the event whose revision it reports
    std::function<void(bool ok, Revision revision)> send;
  };
  struct Waiter {
    AcquireRequest request;
    Millis deadline = 0;
    Reply<AcquireResult> reply;
  };
  // One turn of the actor: what it changed and whom it will answer.
  struct Step {
    Change change;
    std::vector<PendingReply> replies;
  };

  template <typename Fn>
  void post(bool counted, Fn&& fn);
  template <typename Result>
  bool load_or_fail(Reply<Result>& reply);
  storage::Status load();

  // REQUIRES (all below): on the key's strand.
  void settle(Millis now, Step& step);
  // Renew and release: the caller's identity into `holder`, then settle. Returns the turn's time.
  Millis begin_holder_turn(const Caller& caller, HolderParams& holder, Step& step);
  void serve_waiters(Millis now, Step& step);
  void finish(Step& step);
  void on_committed(std::uint64_t seq, bool ok, std::vector<Event>& events);
  void flush_ready(const std::vector<Event>* events, std::uint64_t committed, bool ok);
  void account(const std::vector<Event>& events);
  void rearm();
  void maybe_retire();

  void reply_acquired(Step& step, Reply<AcquireResult> reply, bool fresh);
  void reply_held(Step& step, Reply<AcquireResult> reply, const AcquireOutcome& outcome);
  template <typename Result>
  void reply_now(Step& step, Reply<Result> reply, Result result);
  void reply_holder(Step& step, Reply<HolderResult> reply, HolderOutcome outcome,
                    bool reports_event);

  // What only an actor with work queued or in flight needs. Allocated on demand and freed
  // once drained (see maybe_retire), so a quiet actor holding a lease stays small.
  struct Busy {
    std::list<Waiter> waiters;
    // Replies in request order; pending_head is the first unsent one.
    std::vector<PendingReply> pending;
    std::size_t pending_head = 0;
    // Tenure records of writes not yet committed, so history can answer as of its turn.
    struct InflightTenures {
      std::uint64_t seq;
      std::vector<TenureRecord> records;
    };
    std::vector<InflightTenures> inflight_tenures;
    // Numbering restarts with each Busy: it is freed only when no write is in flight.
    std::uint64_t write_seq = 0;      // last write submitted
    std::uint64_t committed_seq = 0;  // last write the ledger answered

    bool drained() const {
      return waiters.empty() && pending_head == pending.size() && inflight_tenures.empty() &&
             write_seq == committed_seq;
    }
  };
  Busy& busy();
  std::size_t waiter_count() const { return busy_ ? busy_->waiters.size() : 0; }

  std::atomic<std::uint32_t> count_{0};  // references: registry, timers, handlers, commits
  EngineCore& core_;
  std::unique_ptr<Busy> busy_;
  Millis wake_at_ = 0;  // the earliest wake-up scheduled, 0: none
  // no_unique_address lets the fields below take the state's tail padding.
  [[no_unique_address]] KeyState state_;
  const std::uint16_t strand_;  // index into the registry's shared strands
  const std::uint16_t key_size_;
  bool loaded_ = false;
  bool indexed_ = false;  // in the owner index (a durable live lease)
  std::atomic<bool> retired_{false};
};

}  // namespace tenure
