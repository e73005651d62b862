#include "actors/key_actor.hpp"

#include <spdlog/spdlog.h>

#include <bit>
#include <boost/asio/post.hpp>

#include "actors/engine_core.hpp"
#include "actors/reads.hpp"

namespace tenure {

KeyActor::KeyActor(EngineCore& core, std::string key)
    : core_(core), key_(std::move(key)), strand_(core.registry.strand_for(key_)) {}

template <typename Fn>
void KeyActor::post(bool counted, Fn&& fn) {
  boost::asio::post(strand_,
                    [self = shared_from_this(), counted, fn = std::forward<Fn>(fn)]() mutable {
                      if (!self->retired_) fn();
                      if (counted) self->refs.fetch_sub(1);
                      self->maybe_retire();
                    });
}

bool KeyActor::load(std::string& error) {
  if (loaded_) return true;
  auto loaded = core_.ledger->load(key_, error);
  if (!loaded) return false;
  state_ = std::move(loaded->state);
  loaded_ = true;
  if (loaded->corrupt) {
    spdlog::error(
        "ledger row of key {:?} cannot be decoded; treating the key as free with "
        "last token {}",
        key_, state_.last_token);
    Step step;
    step.change.state_dirty = true;
    finish(step);
  }
  return true;
}

template <typename Result>
bool KeyActor::load_or_fail(Reply<Result>& reply) {
  std::string error;
  if (load(error)) return true;
  Result result;
  result.error = Error{errc::unavailable, "cannot read the ledger: " + error};
  reply(std::move(result));
  return false;
}

// ---- replies ---------------------------------------------------------------------------------

template <typename Result>
void KeyActor::reply_now(Step& step, Reply<Result> reply, Result result) {
  step.replies.push_back(PendingReply{
      0, -1,
      [this, reply = std::move(reply), result = std::move(result)](bool ok, Revision) mutable {
        if (!ok) result.error = ledger_unavailable(*core_.ledger);
        reply(std::move(result));
      }});
}

void KeyActor::reply_acquired(Step& step, Reply<AcquireResult> reply, bool fresh) {
  AcquireResult result;
  result.status = AcquireStatus::acquired;
  result.fresh = fresh;
  result.key = key_;
  result.lease = state_.lease;
  step.replies.push_back(PendingReply{
      0, static_cast<int>(step.change.events.size()) - 1,
      [this, reply = std::move(reply), result = std::move(result)](bool ok, Revision rev) mutable {
        if (ok) {
          result.revision = rev;
        } else {
          result.error = ledger_unavailable(*core_.ledger);
        }
        reply(std::move(result));
      }});
}

void KeyActor::reply_held(Step& step, Reply<AcquireResult> reply, const AcquireOutcome& outcome) {
  AcquireResult result;
  result.status = outcome.status;
  result.key = key_;
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
  result.key = key_;
  result.lease = state_.lease;
  result.token = outcome.token;
  int event_index = reports_event ? static_cast<int>(step.change.events.size()) - 1 : -1;
  step.replies.push_back(PendingReply{
      0, event_index,
      [this, reply = std::move(reply), result = std::move(result)](bool ok, Revision rev) mutable {
        if (ok) {
          result.revision = rev;
        } else {
          result.error = ledger_unavailable(*core_.ledger);
        }
        reply(std::move(result));
      }});
}

// ---- the turn: settle, act, persist, answer ---------------------------------------------------

void KeyActor::settle(Millis now, Step& step) {
  expire_if_due(state_, key_, now, step.change);
  serve_waiters(now, step);
}

void KeyActor::serve_waiters(Millis now, Step& step) {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->deadline > now) {
      ++it;
      continue;
    }
    AcquireOutcome outcome{state_.lease ? AcquireStatus::held : AcquireStatus::lock_delay, false,
                           std::max<Millis>(state_.lock_until - now, 0)};
    reply_held(step, std::move(it->reply), outcome);
    it = waiters_.erase(it);
    core_.counters.waiters.fetch_sub(1);
  }
  if (waiters_.empty() || state_.lease || state_.lock_until > now) return;
  Waiter& first = waiters_.front();
  AcquireOutcome outcome =
      acquire(state_, key_, first.request.params, now, core_.config.limits, step.change);
  if (outcome.status == AcquireStatus::acquired) {
    reply_acquired(step, std::move(first.reply), outcome.fresh);
    waiters_.pop_front();
    core_.counters.waiters.fetch_sub(1);
  }
}

void KeyActor::account(const Change& change) {
  for (const Event& e : change.events) {
    switch (e.type) {
      case EventType::acquired:
        core_.counters.live_leases.fetch_add(1);
        core_.owners.add(e.owner, this);
        break;
      case EventType::expired:
        core_.counters.expired.fetch_add(1);
        [[fallthrough]];
      case EventType::released:
      case EventType::revoked:
        core_.counters.live_leases.fetch_sub(1);
        core_.owners.remove(e.owner, this);
        break;
      case EventType::renewed:
        break;
    }
  }
}

void KeyActor::finish(Step& step) {
  Change& change = step.change;
  account(change);
  if (change.lost_conn != 0) {
    for (int i = static_cast<int>(change.events.size()) - 1; i >= 0; --i) {
      const Event& e = change.events[i];
      if (e.type != EventType::expired && e.type != EventType::revoked) continue;
      step.replies.push_back(PendingReply{
          0, i, [this, conn = change.lost_conn, event = e](bool ok, Revision rev) mutable {
            if (!ok) return;
            if (auto listener = core_.connections.find(conn)) {
              event.revision = rev;
              listener->on_lost(event);
            }
          }});
      break;
    }
  }
  std::uint64_t seq = write_seq_;
  if (!change.empty()) {
    seq = ++write_seq_;
    if (!change.tenures.empty()) inflight_tenures_.push_back({seq, change.tenures});
    storage::WriteOp op{key_, change.state_dirty ? std::optional<KeyState>(state_) : std::nullopt,
                        std::move(change.tenures), std::move(change.events)};
    core_.ledger->writer().submit(
        std::move(op), [self = shared_from_this(), seq](bool ok, std::vector<Event>& events) {
          boost::asio::post(self->strand_, [self, seq, ok, events = std::move(events)]() mutable {
            self->on_committed(seq, ok, events);
            self->maybe_retire();
          });
        });
  }
  for (PendingReply& r : step.replies) {
    r.seq = seq;
    pending_.push_back(std::move(r));
  }
  flush_ready(nullptr, committed_seq_, true);
  rearm();
}

void KeyActor::on_committed(std::uint64_t seq, bool ok, std::vector<Event>& events) {
  committed_seq_ = seq;
  std::erase_if(inflight_tenures_, [&](const InflightTenures& t) { return t.seq <= seq; });
  // Memory may be ahead of disk after a failed write: read the key back before its next turn.
  if (!ok) loaded_ = false;
  flush_ready(&events, seq, ok);
}

void KeyActor::flush_ready(const std::vector<Event>* events, std::uint64_t committed, bool ok) {
  while (pending_head_ < pending_.size() && pending_[pending_head_].seq <= committed_seq_) {
    PendingReply r = std::move(pending_[pending_head_++]);
    bool this_write = events != nullptr && r.seq == committed;
    Revision rev = core_.ledger->revision();
    if (this_write && r.event_index >= 0 &&
        static_cast<std::size_t>(r.event_index) < events->size()) {
      rev = (*events)[r.event_index].revision;
    }
    r.send(this_write ? ok : true, rev);
  }
  if (pending_head_ == pending_.size()) {
    std::vector<PendingReply>().swap(pending_);
    pending_head_ = 0;
  }
}

void KeyActor::rearm() {
  Millis next = 0;
  auto consider = [&](Millis t) {
    if (next == 0 || t < next) next = t;
  };
  if (state_.lease && state_.lease->expires_at) consider(*state_.lease->expires_at);
  if (!waiters_.empty()) {
    for (const Waiter& w : waiters_) consider(w.deadline);
    if (!state_.lease && state_.lock_until > 0) consider(state_.lock_until);
  }
  if (next != 0 && (wake_at_ == 0 || next < wake_at_)) {
    wake_at_ = next;
    core_.registry.schedule(shared_from_this(), next);
  }
}

void KeyActor::maybe_retire() {
  if (retired_ || refs.load() != 0 || state_.lease || !waiters_.empty() || !pending_.empty() ||
      write_seq_ != committed_seq_) {
    return;
  }
  if (core_.registry.retire(*this)) retired_ = true;
}

// ---- messages --------------------------------------------------------------------------------

void KeyActor::post_acquire(AcquireRequest request, Reply<AcquireResult> reply) {
  post(true, [this, request = std::move(request), reply = std::move(reply)]() mutable {
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
    if (!waiters_.empty() && !holder_reacquires) {
      // Others are queued (the key is held or in lock-delay): no overtaking them.
      outcome = AcquireOutcome{state_.lease ? AcquireStatus::held : AcquireStatus::lock_delay,
                               false, std::max<Millis>(state_.lock_until - now, 0)};
    } else {
      outcome = acquire(state_, key_, params, now, core_.config.limits, step.change);
    }
    switch (outcome.status) {
      case AcquireStatus::acquired:
        reply_acquired(step, std::move(reply), outcome.fresh);
        break;
      case AcquireStatus::forbidden: {
        AcquireResult result;
        result.error = Error{errc::forbidden, "the lease on this key was acquired by another user"};
        reply_now(step, std::move(reply), std::move(result));
        break;
      }
      case AcquireStatus::held:
      case AcquireStatus::lock_delay:
        if (request.wait_ms > 0) {
          Millis deadline = now + request.wait_ms;
          waiters_.push_back(Waiter{std::move(request), deadline, std::move(reply)});
          core_.counters.waiters.fetch_add(1);
        } else {
          reply_held(step, std::move(reply), outcome);
        }
        break;
    }
    finish(step);
  });
}

Millis KeyActor::begin_holder_turn(const Caller& caller, HolderParams& holder, Step& step) {
  holder.principal = caller.principal;
  holder.admin = caller.admin;
  settle(caller.received_at, step);
  return caller.received_at;
}

void KeyActor::post_renew(RenewRequest request, Reply<HolderResult> reply) {
  post(true, [this, request = std::move(request), reply = std::move(reply)]() mutable {
    if (!load_or_fail(reply)) return;
    Step step;
    Millis now = begin_holder_turn(request.caller, request.holder, step);
    HolderOutcome outcome =
        renew(state_, key_, request.holder, request.ttl_ms, now, core_.config.limits, step.change);
    reply_holder(step, std::move(reply), outcome, outcome.status == HolderStatus::ok);
    finish(step);
  });
}

void KeyActor::post_release(ReleaseRequest request, Reply<HolderResult> reply) {
  post(true, [this, request = std::move(request), reply = std::move(reply)]() mutable {
    if (!load_or_fail(reply)) return;
    Step step;
    Millis now = begin_holder_turn(request.caller, request.holder, step);
    HolderOutcome outcome = release(state_, key_, request.holder, now, step.change);
    reply_holder(step, std::move(reply), outcome, outcome.status == HolderStatus::ok);
    serve_waiters(now, step);
    finish(step);
  });
}

void KeyActor::post_revoke(RevokeRequest request, Reply<HolderResult> reply) {
  post(true, [this, request = std::move(request), reply = std::move(reply)]() mutable {
    if (!load_or_fail(reply)) return;
    Millis now = request.caller.received_at;
    Step step;
    settle(now, step);
    HolderOutcome outcome = revoke(state_, key_, now, step.change);
    reply_holder(step, std::move(reply), outcome, outcome.status == HolderStatus::ok);
    serve_waiters(now, step);
    finish(step);
  });
}

void KeyActor::post_check(CheckRequest request, Reply<HolderResult> reply) {
  post(true, [this, request = std::move(request), reply = std::move(reply)]() mutable {
    if (!load_or_fail(reply)) return;
    Millis now = request.caller.received_at;
    Step step;
    settle(now, step);
    HolderOutcome outcome = check(state_, key_, request.token, request.owner, now, step.change);
    reply_holder(step, std::move(reply), outcome, false);
    finish(step);
  });
}

void KeyActor::post_get(GetRequest request, Reply<GetResult> reply) {
  post(true, [this, request = std::move(request), reply = std::move(reply)]() mutable {
    if (!load_or_fail(reply)) return;
    Step step;
    settle(request.caller.received_at, step);
    GetResult result;
    result.key = key_;
    result.lease = state_.lease;
    result.last_token = state_.last_token;
    result.waiters = waiters_.size();
    reply_now(step, std::move(reply), std::move(result));
    finish(step);
  });
}

void KeyActor::post_history(HistoryRequest request, Reply<HistoryResult> reply) {
  post(true, [this, request = std::move(request), reply = std::move(reply)]() mutable {
    if (!load_or_fail(reply)) return;
    Step step;
    settle(request.caller.received_at, step);
    // As of this turn: the ledger, with this key's uncommitted tenure records laid over it.
    std::vector<TenureRecord> newer;
    for (const InflightTenures& t : inflight_tenures_) {
      newer.insert(newer.end(), t.records.begin(), t.records.end());
    }
    for (const TenureRecord& t : step.change.tenures) newer.push_back(t);
    HistoryResult result = read_history(*core_.ledger, request);
    overlay_history(result, newer, request);
    reply_now(step, std::move(reply), std::move(result));
    finish(step);
  });
}

void KeyActor::post_disconnect(ConnId conn) {
  post(true, [this, conn] {
    if (!loaded_) return;
    Millis now = core_.clock.now();
    Step step;
    // Nobody reads the answer, but it closes the request's books (the engine's in-flight gate).
    std::erase_if(waiters_, [&](Waiter& w) {
      if (w.request.caller.conn != conn) return false;
      AcquireResult result;
      result.error = Error{errc::unavailable, "the connection closed"};
      reply_now(step, std::move(w.reply), std::move(result));
      core_.counters.waiters.fetch_sub(1);
      return true;
    });
    settle(now, step);
    release_on_disconnect(state_, key_, conn, now, step.change);
    serve_waiters(now, step);
    finish(step);
  });
}

void KeyActor::post_recover(storage::LoadedState loaded, std::function<void()> turn_done) {
  post(true, [this, loaded = std::move(loaded), turn_done = std::move(turn_done)]() mutable {
    state_ = std::move(loaded.state);
    loaded_ = true;
    Step step;
    step.change.state_dirty = loaded.corrupt;
    if (state_.lease) {
      core_.counters.live_leases.fetch_add(1);
      core_.owners.add(state_.lease->owner, this);
    }
    Millis now = core_.clock.now();
    if (state_.lease && state_.lease->release_on_disconnect && state_.lease->live_at(now)) {
      // Its connection did not survive the restart (§3 release_on_disconnect).
      HolderParams holder{state_.lease->owner, state_.lease->token, 0, true};
      release(state_, key_, holder, now, step.change);
    }
    settle(now, step);
    finish(step);
    turn_done();
  });
}

void KeyActor::post_shutdown() {
  post(false, [this] {
    Step step;
    for (Waiter& w : waiters_) {
      AcquireResult result;
      result.error = Error{errc::unavailable, "the server is shutting down"};
      reply_now(step, std::move(w.reply), std::move(result));
    }
    core_.counters.waiters.fetch_sub(static_cast<std::int64_t>(waiters_.size()));
    waiters_.clear();
    finish(step);
  });
}

void KeyActor::post_wake(Millis at) {
  post(false, [this, at] {
    if (at != wake_at_) return;  // superseded by an earlier wake-up
    wake_at_ = 0;
    std::string error;
    if (!load(error)) return;
    Millis now = core_.clock.now();
    if (state_.lease && state_.lease->expires_at && *state_.lease->expires_at <= now) {
      auto late = static_cast<std::uint64_t>(now - *state_.lease->expires_at);
      std::size_t bucket = std::min<std::size_t>(std::bit_width(late), 15);
      core_.counters.expiry_lateness_ms_log2[bucket].fetch_add(1);
    }
    Step step;
    settle(now, step);
    finish(step);
  });
}

}  // namespace tenure
