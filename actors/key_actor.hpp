#pragma once
// One key's actor: the only place where that key's lease state changes. Every method posts a
// message to the actor's strand; the state machine runs there, the change goes to the ledger's
// group writer, and replies leave in request order once their change is durable.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "actors/requests.hpp"
#include "storage/ledger.hpp"

namespace tenure {

struct EngineCore;

class KeyActor : public std::enable_shared_from_this<KeyActor> {
 public:
  KeyActor(EngineCore& core, std::string key);

  const std::string& key() const { return key_; }

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

 private:
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
  bool load(std::string& error);

  // REQUIRES (all below): on the key's strand.
  void settle(Millis now, Step& step);
  // Renew and release: the caller's identity into `holder`, then settle. Returns the turn's time.
  Millis begin_holder_turn(const Caller& caller, HolderParams& holder, Step& step);
  void serve_waiters(Millis now, Step& step);
  void finish(Step& step);
  void on_committed(std::uint64_t seq, bool ok, std::vector<Event>& events);
  void flush_ready(const std::vector<Event>* events, std::uint64_t committed, bool ok);
  void account(const Change& change);
  void rearm();
  void maybe_retire();

  void reply_acquired(Step& step, Reply<AcquireResult> reply, bool fresh);
  void reply_held(Step& step, Reply<AcquireResult> reply, const AcquireOutcome& outcome);
  template <typename Result>
  void reply_now(Step& step, Reply<Result> reply, Result result);
  void reply_holder(Step& step, Reply<HolderResult> reply, HolderOutcome outcome,
                    bool reports_event);

  EngineCore& core_;
  const std::string key_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;  // shared, see Registry
  KeyState state_;
  bool loaded_ = false;
  bool retired_ = false;
  std::list<Waiter> waiters_;  // a list: costs nothing while empty, unlike a deque
  // Replies in request order; pending_head_ is the first unsent one. A vector with a head
  // index, released when drained, so an idle actor holds no queue memory.
  std::vector<PendingReply> pending_;
  std::size_t pending_head_ = 0;
  // Tenure records of writes not yet committed, so history can answer as of its turn.
  struct InflightTenures {
    std::uint64_t seq;
    std::vector<TenureRecord> records;
  };
  std::vector<InflightTenures> inflight_tenures_;
  std::uint64_t write_seq_ = 0;      // last write submitted
  std::uint64_t committed_seq_ = 0;  // last write the ledger answered
  Millis wake_at_ = 0;               // the earliest wake-up scheduled, 0: none
};

}  // namespace tenure
