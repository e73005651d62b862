#include "actors/key_actor.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <boost/asio/post.hpp>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "actors/engine_core.hpp"
#include "actors/reads.hpp"
#include "storage/codec.hpp"

namespace tenure {
namespace {

constexpr Millis kRetryAfterRefusal = 1000;

}  // namespace

KeyActor::KeyActor(EngineCore& core, Shard& shard, std::size_t key_size)
    : core_(core), shard_(shard), key_size_(static_cast<std::uint16_t>(key_size)) {}

ActorRef KeyActor::create(EngineCore& core, Shard& shard, std::string_view key) {
  // Transports allow kMaxKeyBytes; the engine API itself does not validate keys.
  if (key.size() > UINT16_MAX) throw std::length_error("key too long for a key actor");
  // One allocation for the actor and its key: the key is stored once, and costs no string.
  void* memory = ::operator new(sizeof(KeyActor) + key.size());
  std::memcpy(static_cast<char*>(memory) + sizeof(KeyActor), key.data(), key.size());
  return ActorRef(new (memory) KeyActor(core, shard, key.size()));
}

void intrusive_ptr_add_ref(KeyActor* actor) {
  actor->count_.fetch_add(1, std::memory_order_relaxed);
}

void intrusive_ptr_release(KeyActor* actor) {
  if (actor->count_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  actor->~KeyActor();
  ::operator delete(actor);
}

namespace {

// Drained Busy parts kept per shard: a key's every write needs one for a moment, and reusing
// them saves an allocation (and its list and vectors' ones) per operation. As many as the keys a
// pipelined load keeps busy at once (50 connections × 16 in flight: ~400 per shard of two),
// each a few hundred bytes.
constexpr std::size_t kSpareBusy = 1024;
// A queue that grew past this under a burst is not kept for reuse.
constexpr std::size_t kSparePendingCapacity = 64;
// Nor are more spare waiter nodes than this.
constexpr std::size_t kSpareWaiters = 64;

AcquireResult forbidden_acquire() {
  AcquireResult result;
  result.error = Error{errc::forbidden, "the lease on this key was acquired by another user"};
  return result;
}

}  // namespace

KeyActor::Busy& KeyActor::busy() {
  if (busy_) return *busy_;
  auto& spare = shard_.spare_busy();
  if (spare.empty()) {
    busy_ = std::make_unique<Busy>();
  } else {
    busy_ = std::move(spare.back());
    spare.pop_back();
  }
  return *busy_;
}

void KeyActor::release_busy() {
  auto& spare = shard_.spare_busy();
  if (spare.size() < kSpareBusy && busy_->pending.capacity() <= kSparePendingCapacity &&
      busy_->inflight_tenures.size() <= kSparePendingCapacity) {
    busy_->pending.clear();
    busy_->pending_head = 0;
    busy_->write_seq = 0;
    busy_->committed_seq = 0;
    busy_->waiters.trim(kSpareWaiters);
    spare.push_back(std::move(busy_));
  }
  busy_.reset();
}

storage::Status KeyActor::load() {
  if (loaded_) return {};
  storage::LoadedState loaded;
  if (storage::Status status = core_.ledger->load(key(), loaded); !status.ok()) return status;
  // A read-back after a refused write: the row does not name the connection to tell of a loss.
  // It is the one memory has for the same tenure, or the one the refused write was to tell.
  ConnId told = state_.lease ? state_.lease->conn : 0;
  Token told_of = state_.lease ? state_.lease->token : 0;
  state_ = std::move(loaded.state);
  Token token = state_.lease ? state_.lease->token : 0;
  ConnId untold = shard_.take_untold(key(), token);
  if (state_.lease) state_.lease->conn = token == told_of ? told : untold;
  loaded_ = true;
  if (loaded.corrupt) {
    spdlog::error(
        "ledger row of key {:?} cannot be decoded; treating the key as free with "
        "last token {}",
        key(), state_.last_token);
    Step step;
    step.change.state_dirty = true;
    finish(step);
  }
  return {};
}

template <typename Result>
bool KeyActor::load_or_fail(Reply<Result>& reply) {
  storage::Status status = load();
  if (status.ok()) return true;
  Result result;
  result.error = ledger_unreadable(status);
  reply(std::move(result));
  return false;
}

// ---- replies ---------------------------------------------------------------------------------

void KeyActor::send(PendingReply& reply, bool ok, Revision revision) {
  std::visit(
      [&]<typename A>(A& answer) {
        if constexpr (!std::is_same_v<A, std::monostate>) {
          if (!ok) {
            answer.result.error = ledger_unavailable(*core_.ledger);
          } else if constexpr (requires { answer.result.revision; }) {
            if (reply.reports_revision) answer.result.revision = revision;
          }
          answer.reply(std::move(answer.result));
        }
      },
      reply.answer);
}

template <typename Result>
void KeyActor::reply_now(Step& step, Reply<Result> reply, Result result) {
  PendingReply& r = step.replies.emplace_back();
  r.answer.template emplace<Answer<Result>>(Answer<Result>{std::move(reply), std::move(result)});
}

void KeyActor::reply_acquired(Step& step, Reply<AcquireResult> reply, bool fresh) {
  AcquireResult result;
  result.status = AcquireStatus::acquired;
  result.fresh = fresh;
  result.key = key();
  result.lease = state_.lease;
  reply_now(step, std::move(reply), std::move(result));
  step.replies.back().event_index = static_cast<int>(step.change.events.size()) - 1;
  step.replies.back().reports_revision = true;
}

void KeyActor::reply_held(Step& step, Reply<AcquireResult> reply, const AcquireOutcome& outcome) {
  AcquireResult result;
  result.status = outcome.status;
  result.key = key();
  result.lease = state_.lease;
  result.last_token = state_.last_token;
  result.retry_after_ms = outcome.retry_after_ms;
  reply_now(step, std::move(reply), std::move(result));
}

void KeyActor::reply_holder(Step& step, Reply<HolderResult> reply, HolderOutcome outcome,
                            bool reports_event) {
  HolderResult result;
  if (outcome.status == HolderStatus::forbidden) {
    result.error = Error{errc::forbidden, "the lease on this key was acquired by another user"};
  }
  result.status = outcome.status;
  result.reason = outcome.reason;
  result.key = key();
  result.lease = state_.lease;
  result.token = outcome.token;
  reply_now(step, std::move(reply), std::move(result));
  step.replies.back().event_index =
      reports_event ? static_cast<int>(step.change.events.size()) - 1 : -1;
  step.replies.back().reports_revision = true;
}

// ---- the turn: settle, act, persist, answer ---------------------------------------------------

void KeyActor::settle(Millis now, Step& step) {
  expire_if_due(state_, key(), now, step.change);
  serve_waiters(now, step);
}

void KeyActor::serve_waiters(Millis now, Step& step) {
  if (!busy_) return;
  auto& waiters = busy_->waiters;
  // The key free now goes to the first waiter before any wait is timed out: one whose wait ends
  // at this very moment (the holder's deadline, the end of a lock-delay) waited for exactly this,
  // and a `held` would name no holder.
  if (!waiters.empty() && !state_.lease && state_.lock_until <= now) {
    Waiter& first = waiters.front();
    AcquireOutcome outcome =
        tenure::acquire(state_, key(), first.request.params, now, core_.config.limits, step.change);
    if (outcome.status == AcquireStatus::acquired) {
      reply_acquired(step, std::move(first.reply), outcome.fresh);
      waiters.pop_front();
      core_.counters.waiters.fetch_sub(1);
      answer_holders_waiters(now, step);
    }
  }
  // The key is held or in lock-delay now: the waits that ran out are answered so.
  for (auto it = waiters.begin(); it != waiters.end();) {
    if (it->deadline > now) {
      ++it;
      continue;
    }
    AcquireOutcome outcome{state_.lease ? AcquireStatus::held : AcquireStatus::lock_delay, false,
                           std::max<Millis>(state_.lock_until - now, 0)};
    reply_held(step, std::move(it->reply), outcome);
    it = waiters.erase(it);
    core_.counters.waiters.fetch_sub(1);
  }
}

// Another acquire of the holder's owner is idempotent (§3): a waiter of that owner, queued while
// somebody else held the key, is answered now as such (a `renewed`, its options taking over),
// where it would otherwise wait for the next hand-over and time out `held` by its own lease.
void KeyActor::answer_holders_waiters(Millis now, Step& step) {
  auto& waiters = busy_->waiters;
  for (auto it = waiters.begin(); it != waiters.end();) {
    if (it->request.params.owner != state_.lease->owner) {
      ++it;
      continue;
    }
    AcquireOutcome outcome =
        tenure::acquire(state_, key(), it->request.params, now, core_.config.limits, step.change);
    if (outcome.status == AcquireStatus::acquired) {
      reply_acquired(step, std::move(it->reply), outcome.fresh);
    } else if (outcome.status == AcquireStatus::forbidden) {
      reply_now(step, std::move(it->reply), forbidden_acquire());
    } else {
      ++it;  // not of a live lease of the same owner: cannot happen, and it waits on if it does
      continue;
    }
    it = waiters.erase(it);
    core_.counters.waiters.fetch_sub(1);
  }
}

void KeyActor::account(const Events& events) {
  for (const Event& e : events) {
    switch (e.type) {
      case EventType::acquired:
        core_.counters.live_leases.fetch_add(1);
        shard_.owners().add(e.owner, this);
        indexed_ = true;
        break;
      case EventType::expired:
        core_.counters.expired.fetch_add(1);
        [[fallthrough]];
      case EventType::released:
      case EventType::revoked:
        core_.counters.live_leases.fetch_sub(1);
        shard_.owners().remove(e.owner, this);
        indexed_ = false;
        break;
      case EventType::renewed:
      case EventType::recovered:
        break;
    }
  }
}

void KeyActor::finish(Step& step) {
  Change& change = step.change;
  for (const LostTenure& lost_tenure : change.lost) {
    PendingReply& lost = step.replies.emplace_back();
    lost.event_index = static_cast<int>(lost_tenure.event_index);
    lost.lost_conn = lost_tenure.conn;
  }
  if (!busy_ && change.empty()) {
    // No write of this key in flight, none made: the replies can leave now, without a queue.
    for (PendingReply& r : step.replies) send(r, true, core_.ledger->revision());
    rearm();
    return;
  }
  Busy& b = busy();
  std::uint64_t seq = b.write_seq;
  if (!change.empty()) {
    seq = ++b.write_seq;
    if (!change.tenures.empty()) keep_inflight(b, seq, change.tenures);
    shard_.stage(*this, seq,
                 storage::WriteOp{std::string(key()), encoded_row(change.state_dirty),
                                  std::move(change.tenures), std::move(change.events)});
  }
  for (PendingReply& r : step.replies) {
    r.seq = seq;
    b.pending.push_back(std::move(r));
  }
  flush_ready(nullptr, b.committed_seq, true);
  rearm();
}

void KeyActor::keep_inflight(Busy& b, std::uint64_t seq, TenureRecords& tenures) {
  for (TenureRecord& t : tenures) {
    if (b.inflight_count == b.inflight_tenures.size()) b.inflight_tenures.emplace_back();
    Busy::InflightTenure& kept = b.inflight_tenures[b.inflight_count++];
    kept.seq = seq;
    if (t.ended_at) {
      kept.record = t;
    } else {
      kept.record = std::move(t);
    }
  }
  tenures.erase(std::remove_if(tenures.begin(), tenures.end(),
                               [](const TenureRecord& t) { return !t.ended_at; }),
                tenures.end());
}

std::optional<std::string> KeyActor::encoded_row(bool dirty) const {
  if (!dirty) return std::nullopt;
  // A buffer of a committed row: a row with a lease and a long owner fits it.
  std::optional<std::string> row(shard_.spare_row());
  storage::encode_state(state_, *row);
  return row;
}

void KeyActor::on_committed(std::uint64_t seq, bool ok, Events& events) {
  busy_->committed_seq = seq;
  // The committed records are the first ones: they go behind the others, spent.
  auto& inflight = busy_->inflight_tenures;
  auto live = inflight.begin() + static_cast<std::ptrdiff_t>(busy_->inflight_count);
  auto committed = std::find_if(inflight.begin(), live,
                                [&](const Busy::InflightTenure& t) { return t.seq > seq; });
  busy_->inflight_count -= static_cast<std::size_t>(committed - inflight.begin());
  std::rotate(inflight.begin(), committed, live);
  if (retired_) {
    // Dropped with its slot: the key's books are kept by its new owner, from the ledger.
    if (!ok) core_.ledger->refusal_settled();
  } else if (ok) {
    // Bookkeeping follows durability: an owner index entry exists only for a durable lease.
    account(events);
  } else {
    // Memory may be ahead of disk after a failed write: read the key back before its next turn,
    // and only then may the writer take writes again (see GroupWriter::submit).
    loaded_ = false;
    core_.ledger->refusal_settled();
    // Its timer was armed from the state that was not written.
    read_back_later();
  }
  flush_ready(&events, seq, ok);
}

void KeyActor::flush_ready(Events* events, std::uint64_t committed, bool ok) {
  Busy& b = *busy_;
  auto next_ready = [&b] {
    return b.pending_head < b.pending.size() && b.pending[b.pending_head].seq <= b.committed_seq;
  };
  while (next_ready()) {
    PendingReply r = std::move(b.pending[b.pending_head++]);
    bool this_write = events != nullptr && r.seq == committed;
    Event* event = nullptr;
    if (this_write && r.event_index >= 0 &&
        static_cast<std::size_t>(r.event_index) < events->size()) {
      event = &(*events)[r.event_index];
    }
    if (r.lost_conn != 0) {
      // Its event comes with its write's commit; the shard sends a connection's notices of a
      // commit together, unless a reply on this key follows now: that reply (a renew answered
      // not_holder, say) must not reach the holder before the notice of its loss.
      if (event != nullptr && ok) {
        shard_.lost(r.lost_conn, std::move(*event));
        if (next_ready()) shard_.send_lost();
      } else if (event != nullptr && event->type != EventType::renewed) {
        // The ledger still has the lease. The key is read back later, and told when it ends after
        // all; or its slot has gone meanwhile, and the new owner does not know the connection.
        if (retired_) {
          shard_.unowned(r.lost_conn, {std::string(key()), event->token});
        } else {
          shard_.keep_untold(key(), event->token, r.lost_conn);
        }
      }
      continue;
    }
    send(r, this_write ? ok : true, event != nullptr ? event->revision : core_.ledger->revision());
  }
  if (b.pending_head == b.pending.size()) {
    b.pending.clear();
    b.pending_head = 0;
  }
}

void KeyActor::rearm() {
  Millis next = 0;
  auto consider = [&](Millis t) {
    if (next == 0 || t < next) next = t;
  };
  if (state_.lease && state_.lease->expires_at) consider(*state_.lease->expires_at);
  if (waiter_count() > 0) {
    for (const Waiter& w : busy_->waiters) consider(w.deadline);
    if (!state_.lease && state_.lock_until > 0) consider(state_.lock_until);
  }
  if (next != 0 && (wake_at_ == 0 || next < wake_at_)) {
    wake_at_ = next;
    shard_.schedule(*this, next);
  }
}

void KeyActor::read_back_later() {
  wake_at_ = core_.clock.now() + kRetryAfterRefusal;
  shard_.schedule(*this, wake_at_);
}

void KeyActor::maybe_retire() {
  if (busy_ && busy_->drained()) release_busy();
  // The owner index points at this actor while the ledger says it holds a lease, even when a
  // failed write left memory without it.
  if (!idle()) return;
  shard_.went_idle(*this, ++idle_mark_);  // may drop the shard's reference: the caller holds one
}

// ---- messages --------------------------------------------------------------------------------

void KeyActor::acquire(AcquireRequest request, Reply<AcquireResult> reply) {
  if (!load_or_fail(reply)) return;
  Millis now = request.caller.received_at;
  AcquireParams& params = request.params;
  params.principal = request.caller.principal;
  params.admin = request.caller.admin;
  params.conn = request.caller.conn;
  Step step;
  settle(now, step);
  AcquireOutcome outcome;
  bool holder_reacquires = state_.lease && state_.lease->owner == params.owner;
  if (waiter_count() > 0 && !holder_reacquires) {
    // Others are queued (the key is held or in lock-delay): no overtaking them.
    outcome = AcquireOutcome{state_.lease ? AcquireStatus::held : AcquireStatus::lock_delay, false,
                             std::max<Millis>(state_.lock_until - now, 0)};
  } else {
    outcome = tenure::acquire(state_, key(), params, now, core_.config.limits, step.change);
  }
  switch (outcome.status) {
    case AcquireStatus::acquired:
      reply_acquired(step, std::move(reply), outcome.fresh);
      break;
    case AcquireStatus::forbidden:
      reply_now(step, std::move(reply), forbidden_acquire());
      break;
    case AcquireStatus::held:
    case AcquireStatus::lock_delay:
      if (request.wait_ms > 0) {
        Millis deadline = now + request.wait_ms;
        busy().waiters.push_back(Waiter{std::move(request), deadline, std::move(reply)});
        core_.counters.waiters.fetch_add(1);
      } else {
        reply_held(step, std::move(reply), outcome);
      }
      break;
  }
  finish(step);
}

Millis KeyActor::begin_holder_turn(const Caller& caller, HolderParams& holder, Step& step) {
  holder.principal = caller.principal;
  holder.admin = caller.admin;
  settle(caller.received_at, step);
  return caller.received_at;
}

void KeyActor::renew(RenewRequest request, Reply<HolderResult> reply) {
  if (!load_or_fail(reply)) return;
  Step step;
  Millis now = begin_holder_turn(request.caller, request.holder, step);
  HolderOutcome outcome = tenure::renew(state_, key(), request.holder, request.ttl_ms, now,
                                        core_.config.limits, step.change);
  reply_holder(step, std::move(reply), outcome, outcome.status == HolderStatus::ok);
  finish(step);
}

void KeyActor::release(ReleaseRequest request, Reply<HolderResult> reply) {
  if (!load_or_fail(reply)) return;
  Step step;
  Millis now = begin_holder_turn(request.caller, request.holder, step);
  HolderOutcome outcome = tenure::release(state_, key(), request.holder, now, step.change);
  reply_holder(step, std::move(reply), outcome, outcome.status == HolderStatus::ok);
  serve_waiters(now, step);
  finish(step);
}

void KeyActor::revoke(RevokeRequest request, Reply<HolderResult> reply) {
  if (!load_or_fail(reply)) return;
  Millis now = request.caller.received_at;
  Step step;
  settle(now, step);
  std::optional<Lease> revoked = state_.lease;
  HolderOutcome outcome =
      tenure::revoke(state_, key(), Revocation{std::move(request.by), std::move(request.reason)},
                     now, step.change);
  reply_holder(step, std::move(reply), outcome, outcome.status == HolderStatus::ok);
  // The lease it ended, whose owner the audit log names.
  if (outcome.status == HolderStatus::ok) {
    std::get<Answer<HolderResult>>(step.replies.back().answer).result.lease = std::move(revoked);
  }
  serve_waiters(now, step);
  finish(step);
}

void KeyActor::check(CheckRequest request, Reply<HolderResult> reply) {
  if (!load_or_fail(reply)) return;
  Millis now = request.caller.received_at;
  Step step;
  settle(now, step);
  HolderOutcome outcome =
      tenure::check(state_, key(), request.token, request.owner, now, step.change);
  reply_holder(step, std::move(reply), outcome, false);
  finish(step);
}

void KeyActor::get(GetRequest request, Reply<GetResult> reply) {
  if (!load_or_fail(reply)) return;
  Step step;
  settle(request.caller.received_at, step);
  GetResult result;
  result.key = key();
  result.lease = state_.lease;
  result.last_token = state_.last_token;
  result.waiters = waiter_count();
  if (busy_) {
    for (const Waiter& w : busy_->waiters) {
      if (result.waiting.size() == GetResult::kMaxListedWaiters) break;
      result.waiting.push_back({w.request.params.owner, w.request.caller.received_at});
    }
  }
  if (!state_.lease && state_.lock_until > request.caller.received_at) {
    result.lock_delay_until = state_.lock_until;
  }
  reply_now(step, std::move(reply), std::move(result));
  finish(step);
}

void KeyActor::history(HistoryRequest request, Reply<HistoryResult> reply) {
  if (!load_or_fail(reply)) return;
  Step step;
  settle(request.caller.received_at, step);
  // As of this turn: the ledger, with this key's uncommitted tenure records laid over it.
  std::vector<TenureRecord> newer;
  if (busy_) {
    for (std::size_t i = 0; i < busy_->inflight_count; ++i) {
      newer.push_back(busy_->inflight_tenures[i].record);
    }
  }
  for (const TenureRecord& t : step.change.tenures) newer.push_back(t);
  HistoryResult result = read_history(*core_.ledger, request);
  overlay_history(result, newer, request);
  reply_now(step, std::move(reply), std::move(result));
  finish(step);
}

void KeyActor::disconnect(ConnId conn) {
  if (!loaded_) return;
  Millis now = core_.clock.now();
  Step step;
  // Nobody reads the answer, but it closes the request's books (the engine's in-flight gate).
  if (busy_) {
    busy_->waiters.erase_if([&](Waiter& w) {
      if (w.request.caller.conn != conn) return false;
      AcquireResult result;
      result.error = Error{errc::unavailable, "the connection closed"};
      reply_now(step, std::move(w.reply), std::move(result));
      core_.counters.waiters.fetch_sub(1);
      return true;
    });
  }
  settle(now, step);
  release_on_disconnect(state_, key(), conn, now, step.change);
  serve_waiters(now, step);
  finish(step);
}

void KeyActor::recover(storage::LoadedState loaded) {
  state_ = std::move(loaded.state);
  loaded_ = true;
  Step step;
  step.change.state_dirty = loaded.corrupt;
  if (state_.lease) {
    core_.counters.live_leases.fetch_add(1);
    shard_.owners().add(state_.lease->owner, this);
    indexed_ = true;
  }
  Millis now = core_.clock.now();
  if (state_.lease && state_.lease->release_on_disconnect && state_.lease->live_at(now)) {
    // Its connection did not survive the restart (§3 release_on_disconnect).
    HolderParams holder{state_.lease->owner, state_.lease->token, 0, true};
    tenure::release(state_, key(), holder, now, step.change);
  }
  // A lease whose deadline passed while the ledger was closed is left to the shard's timer
  // (finish() asks for a wake-up at that deadline): a restart over a million of them serves
  // requests at once and ends them as any expiry storm, between requests (§4). Until then
  // every operation finds them ended. No waiter survives a restart, so none waits for them.
  overdue_at_recovery_ = state_.lease && !state_.lease->live_at(now);
  finish(step);
}

void KeyActor::turn_away_waiters(const char* why) {
  Step step;
  if (busy_) {
    for (Waiter& w : busy_->waiters) {
      AcquireResult result;
      result.error = Error{errc::unavailable, why};
      reply_now(step, std::move(w.reply), std::move(result));
    }
    core_.counters.waiters.fetch_sub(static_cast<std::int64_t>(busy_->waiters.size()));
    busy_->waiters.clear();
  }
  finish(step);
}

void KeyActor::shutdown() { turn_away_waiters("the server is shutting down"); }

bool KeyActor::drop() {
  turn_away_waiters(kKeyMoved);
  if (!indexed_) return false;
  core_.counters.live_leases.fetch_sub(1);  // counted by the node that owns the key now
  indexed_ = false;
  return true;
}

std::pair<ConnId, Token> KeyActor::told_of() const {
  bool durable = loaded_ && (!busy_ || busy_->write_seq == busy_->committed_seq);
  if (!durable || !state_.lease) return {0, 0};
  return {state_.lease->conn, state_.lease->token};
}

void KeyActor::wake(Millis at) {
  if (at != wake_at_) return;  // superseded by an earlier wake-up
  wake_at_ = 0;
  if (!load().ok()) {
    // The ledger cannot be read now (etcd away, or a write's outcome not known yet); until it
    // can, requests on the key answer `unavailable`, and the timer keeps asking, so a lease
    // that falls due meanwhile still ends by itself once it can (§4).
    read_back_later();
    return;
  }
  Millis now = core_.clock.now();
  // The first wake-up after recovery is the overdue lease's, if it had one.
  bool restart_overdue = std::exchange(overdue_at_recovery_, false);
  if (state_.lease && state_.lease->expires_at && *state_.lease->expires_at <= now &&
      !restart_overdue) {
    auto late = static_cast<std::uint64_t>(now - *state_.lease->expires_at);
    std::size_t bucket = std::min<std::size_t>(std::bit_width(late), 15);
    core_.counters.expiry_lateness_ms_log2[bucket].fetch_add(1);
    core_.counters.expiry_lateness_ms_sum.fetch_add(late);
  }
  Step step;
  settle(now, step);
  finish(step);
}

}  // namespace tenure
