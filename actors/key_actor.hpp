#pragma once
// One key's actor: the only place where that key's lease state changes. It lives in its key's
// shard and runs only there: the state machine runs in the shard's turn, the change is staged
// for the shard's next write group, and replies leave in request order once their change is
// durable.
#include <atomic>
#include <boost/container/small_vector.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "actors/actor_ref.hpp"
#include "actors/requests.hpp"
#include "core/recycling_list.hpp"
#include "storage/ledger.hpp"

namespace tenure {

struct EngineCore;
class Shard;

// The key's bytes live right after the object, in the same allocation (see create).
class KeyActor {
 public:
  // A new, unloaded actor of `shard`.
  static ActorRef create(EngineCore& core, Shard& shard, std::string_view key);
  KeyActor(const KeyActor&) = delete;
  KeyActor& operator=(const KeyActor&) = delete;

  std::string_view key() const {
    return {reinterpret_cast<const char*>(this) + sizeof(KeyActor), key_size_};
  }

  // REQUIRES (every method below): on the shard's strand, with a reference held by the caller
  // (maybe_retire may drop the shard's).
  void acquire(AcquireRequest request, Reply<AcquireResult> reply);
  void renew(RenewRequest request, Reply<HolderResult> reply);
  void release(ReleaseRequest request, Reply<HolderResult> reply);
  void revoke(RevokeRequest request, Reply<HolderResult> reply);
  void check(CheckRequest request, Reply<HolderResult> reply);
  void get(GetRequest request, Reply<GetResult> reply);
  void history(HistoryRequest request, Reply<HistoryResult> reply);
  void disconnect(ConnId conn);
  void recover(storage::LoadedState loaded);
  void shutdown();
  // Its slot moved to another node: lets go of the key without writing (waiters are answered
  // `unavailable`). True if the shard's owner index has it, to forget; the shard retires it.
  bool drop();
  // The connection this node tells of the lease's loss and its token, when the ledger has the
  // lease as memory does (no write refused, none in flight); else {0, 0}.
  std::pair<ConnId, Token> told_of() const;
  // The deadline `at` (scheduled by this actor) is due.
  void wake(Millis at);
  // The write `seq` of this actor was made durable (ok) or refused.
  void on_committed(std::uint64_t seq, bool ok, Events& events);
  // Tells the shard when nothing keeps the actor (no lease, no waiter, no write in flight): it
  // may then retire it, at once or once it is among the least recently used idle keys.
  void maybe_retire();
  // Nothing keeps the actor, and it has not been used since idle mark `mark`.
  bool idle_since(std::uint32_t mark) const { return idle() && idle_mark_ == mark; }
  void retire() { retired_ = true; }

  bool retired() const { return retired_; }
  Millis wake_at() const { return wake_at_; }

 private:
  friend class Shard;  // keeps drained Busy parts
  friend void intrusive_ptr_add_ref(KeyActor* actor);
  friend void intrusive_ptr_release(KeyActor* actor);
  KeyActor(EngineCore& core, Shard& shard, std::size_t key_size);
  ~KeyActor() = default;

  // A reply and the result it will send, kept by value: a std::function around them would
  // allocate per request.
  template <typename Result>
  struct Answer {
    Reply<Result> reply;
    Result result;
  };
  struct PendingReply {
    std::uint64_t seq = 0;  // the write this reply waits for
    int event_index = -1;   // the event whose revision it reports
    // Empty: a `lost` notice instead of a reply, the connection told once the event is durable.
    std::variant<std::monostate, Answer<AcquireResult>, Answer<HolderResult>, Answer<GetResult>,
                 Answer<HistoryResult>>
        answer;
    bool reports_revision = false;  // the result's revision is the commit's
    ConnId lost_conn = 0;
  };
  // Sends the reply: `ok` whether its write was made durable, `revision` the one it reports.
  void send(PendingReply& reply, bool ok, Revision revision);
  struct Waiter {
    AcquireRequest request;
    Millis deadline = 0;
    Reply<AcquireResult> reply;
  };
  // One turn of the actor: what it changed and whom it will answer.
  struct Step {
    Change change;
    // A turn answers one request, and now and then a waiter or a `lost` notice besides.
    boost::container::small_vector<PendingReply, 2> replies;
  };

  template <typename Result>
  bool load_or_fail(Reply<Result>& reply);
  storage::Status load();

  // REQUIRES (all below): on the key's strand.
  void settle(Millis now, Step& step);
  // Renew and release: the caller's identity into `holder`, then settle. Returns the turn's time.
  Millis begin_holder_turn(const Caller& caller, HolderParams& holder, Step& step);
  void serve_waiters(Millis now, Step& step);
  // After a hand-over: the waiters of the owner that now holds the key are its re-acquires (§3).
  void answer_holders_waiters(Millis now, Step& step);
  void finish(Step& step);
  // The key's lease row as the ledger stores it, if this turn changed it.
  std::optional<std::string> encoded_row(bool dirty) const;
  // `events`: the committed write's, which its `lost` notices take.
  void flush_ready(Events* events, std::uint64_t committed, bool ok);
  void account(const Events& events);
  void rearm();
  // Wakes the actor a second from now to read its key back and settle it, for when memory may
  // not match the ledger and nothing else may touch the key before its lease is due.
  void read_back_later();
  // Answers every waiter `unavailable` with `why`.
  void turn_away_waiters(const char* why);
  bool idle() const { return !retired_ && !state_.lease && !busy_ && !indexed_; }

  void reply_acquired(Step& step, Reply<AcquireResult> reply, bool fresh);
  void reply_held(Step& step, Reply<AcquireResult> reply, const AcquireOutcome& outcome);
  template <typename Result>
  void reply_now(Step& step, Reply<Result> reply, Result result);
  void reply_holder(Step& step, Reply<HolderResult> reply, HolderOutcome outcome,
                    bool reports_event);

  // What only an actor with work queued or in flight needs. Allocated on demand and freed
  // once drained (see maybe_retire), so a quiet actor holding a lease stays small.
  struct Busy {
    RecyclingList<Waiter> waiters;  // its nodes reused: hand-overs allocate none
    // Replies in request order; pending_head is the first unsent one.
    std::vector<PendingReply> pending;
    std::size_t pending_head = 0;
    // Tenure records of writes not yet committed, so history can answer as of its turn: the
    // first `inflight_count`, in write order. The rest are spent ones, kept so that the vector
    // does not regrow.
    struct InflightTenure {
      std::uint64_t seq;
      TenureRecord record;
    };
    std::vector<InflightTenure> inflight_tenures;
    std::size_t inflight_count = 0;
    // Numbering restarts with each Busy: it is freed only when no write is in flight.
    std::uint64_t write_seq = 0;      // last write submitted
    std::uint64_t committed_seq = 0;  // last write the ledger answered

    bool drained() const {
      return waiters.empty() && pending_head == pending.size() && inflight_count == 0 &&
             write_seq == committed_seq;
    }
  };
  Busy& busy();
  // Gives back a drained Busy, kept by the shard for the next of its actors that needs one.
  void release_busy();
  std::size_t waiter_count() const { return busy_ ? busy_->waiters.size() : 0; }
  // Keeps the write's tenure records for history; leaves in `tenures` the ended ones, the only
  // ones the ledger writes (a live tenure is read from the lease row).
  void keep_inflight(Busy& busy, std::uint64_t seq, TenureRecords& tenures);

  std::atomic<std::uint32_t> count_{0};  // references: the shard, its deadlines, its writes
  EngineCore& core_;
  Shard& shard_;
  std::unique_ptr<Busy> busy_;
  Millis wake_at_ = 0;           // the earliest wake-up scheduled, 0: none
  std::uint32_t idle_mark_ = 0;  // counts the times the actor went idle
  // no_unique_address lets the fields below take the state's tail padding.
  [[no_unique_address]] KeyState state_;
  const std::uint16_t key_size_;
  bool loaded_ = false;
  bool indexed_ = false;  // in the owner index (a durable live lease)
  bool retired_ = false;
  // Recovered with its deadline already passed: its expiry is the restart's, not a late timer's.
  bool overdue_at_recovery_ = false;
};

}  // namespace tenure
