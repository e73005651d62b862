#include "core/lease_machine.hpp"

#include <algorithm>
#include <utility>

namespace tenure {

std::string_view to_string(EventType type) {
  switch (type) {
    case EventType::acquired:
      return "acquired";
    case EventType::renewed:
      return "renewed";
    case EventType::released:
      return "released";
    case EventType::expired:
      return "expired";
    case EventType::revoked:
      return "revoked";
    case EventType::recovered:
      return "recovered";
  }
  return "unknown";
}

std::string_view to_string(EndReason reason) {
  switch (reason) {
    case EndReason::released:
      return "released";
    case EndReason::expired:
      return "expired";
    case EndReason::revoked:
      return "revoked";
  }
  return "unknown";
}

std::string_view to_string(NotHolderReason reason) {
  switch (reason) {
    case NotHolderReason::expired:
      return "expired";
    case NotHolderReason::held_by_other:
      return "held_by_other";
    case NotHolderReason::free:
      return "free";
    case NotHolderReason::token_mismatch:
      return "token_mismatch";
  }
  return "free";
}

Millis clamp_ttl(std::optional<Millis> requested, const Limits& limits) {
  return std::clamp(requested.value_or(limits.default_ttl), limits.min_ttl, limits.max_ttl);
}

namespace {

Event make_event(EventType type, std::string_view key, const Lease& lease, Millis at) {
  return Event{type, std::string(key), lease.owner, lease.token, at, lease.expires_at, 0, {}};
}

// Ends the live tenure: event, tenure record, and the memory of who held it last.
void end_tenure(KeyState& state, std::string_view key, EndReason reason, Millis ended_at,
                Millis event_at, Change& change, const Revocation& revocation = {}) {
  Lease& lease = *state.lease;
  static constexpr EventType kEventFor[] = {EventType::released, EventType::expired,
                                            EventType::revoked};
  change.events.push_back(make_event(kEventFor[static_cast<int>(reason)], key, lease, event_at));
  change.events.back().revocation = revocation;
  change.tenures.push_back(
      TenureRecord{lease.token, lease.owner, lease.acquired_at, ended_at, reason, revocation});
  if (reason != EndReason::released) {
    if (lease.lock_delay_ms > 0) state.lock_until = ended_at + lease.lock_delay_ms;
    if (lease.conn != 0) change.lost.push_back({change.events.size() - 1, lease.conn});
  }
  state.last_owner = std::move(lease.owner);
  state.last_end = reason;
  state.lease.reset();
  change.state_dirty = true;
}

void set_expiry(Lease& lease, bool open_ended, Millis ttl, Millis now) {
  if (open_ended) {
    lease.expires_at.reset();
    lease.ttl_ms = 0;
  } else {
    lease.expires_at = now + ttl;
    lease.ttl_ms = ttl;
  }
}

}  // namespace

void expire_if_due(KeyState& state, std::string_view key, Millis now, Change& change) {
  if (state.lock_until != 0 && state.lock_until <= now) {
    state.lock_until = 0;
    change.state_dirty = true;
  }
  if (state.lease && !state.lease->live_at(now)) {
    Millis deadline = *state.lease->expires_at;
    end_tenure(state, key, EndReason::expired, deadline, now, change);
    if (state.lock_until != 0 && state.lock_until <= now) state.lock_until = 0;
  }
}

NotHolderReason not_holder_reason(const KeyState& state, std::string_view owner,
                                  std::optional<Token> token) {
  if (state.lease) {
    if (state.lease->owner != owner) return NotHolderReason::held_by_other;
    return NotHolderReason::token_mismatch;
  }
  bool own_tenure_ran_out = state.last_end == EndReason::expired && state.last_owner == owner &&
                            (!token || *token == state.last_token);
  return own_tenure_ran_out ? NotHolderReason::expired : NotHolderReason::free;
}

AcquireOutcome acquire(KeyState& state, std::string_view key, const AcquireParams& params,
                       Millis now, const Limits& limits, Change& change) {
  expire_if_due(state, key, now, change);
  Millis ttl = clamp_ttl(params.ttl_ms, limits);
  Millis lock_delay = std::clamp<Millis>(params.lock_delay_ms, 0, limits.max_lock_delay);
  if (state.lease) {
    Lease& lease = *state.lease;
    if (lease.owner != params.owner) return {AcquireStatus::held, false, 0};
    if (lease.principal != params.principal && !params.admin) {
      return {AcquireStatus::forbidden, false, 0};
    }
    set_expiry(lease, params.open_ended, ttl, now);
    lease.release_on_disconnect = params.release_on_disconnect;
    lease.lock_delay_ms = lock_delay;
    ConnId told = std::exchange(lease.conn, params.conn);
    change.events.push_back(make_event(EventType::renewed, key, lease, now));
    if (told != 0 && told != params.conn) change.lost.push_back({change.events.size() - 1, told});
    change.state_dirty = true;
    return {AcquireStatus::acquired, false, 0};
  }
  if (state.lock_until > now) return {AcquireStatus::lock_delay, false, state.lock_until - now};

  Lease lease;
  lease.owner = params.owner;
  lease.token = std::max(state.last_token, limits.token_floor) + 1;
  lease.acquired_at = now;
  set_expiry(lease, params.open_ended, ttl, now);
  lease.principal = params.principal;
  lease.conn = params.conn;
  lease.release_on_disconnect = params.release_on_disconnect;
  lease.lock_delay_ms = lock_delay;
  state.last_token = lease.token;
  change.events.push_back(make_event(EventType::acquired, key, lease, now));
  change.tenures.push_back(
      TenureRecord{lease.token, lease.owner, now, std::nullopt, std::nullopt, {}});
  change.state_dirty = true;
  state.lease = std::move(lease);
  return {AcquireStatus::acquired, true, 0};
}

namespace {

// Shared gate of renew and release: is the caller the live holder of this tenure?
std::optional<HolderOutcome> refuse_unless_holder(const KeyState& state,
                                                  const HolderParams& params) {
  const Lease& lease = *state.lease;
  if (lease.owner != params.owner || (params.token && *params.token != lease.token)) {
    return HolderOutcome{HolderStatus::not_holder,
                         not_holder_reason(state, params.owner, params.token), std::nullopt};
  }
  if (lease.principal != params.principal && !params.admin) {
    return HolderOutcome{HolderStatus::forbidden, NotHolderReason::free, std::nullopt};
  }
  return std::nullopt;
}

}  // namespace

HolderOutcome renew(KeyState& state, std::string_view key, const HolderParams& params,
                    std::optional<Millis> ttl_ms, Millis now, const Limits& limits,
                    Change& change) {
  expire_if_due(state, key, now, change);
  if (!state.lease) {
    return {HolderStatus::not_holder, not_holder_reason(state, params.owner, params.token),
            std::nullopt};
  }
  if (auto refused = refuse_unless_holder(state, params)) return *refused;
  Lease& lease = *state.lease;
  if (lease.open_ended()) return {HolderStatus::noop, NotHolderReason::free, lease.token};
  Millis ttl = ttl_ms ? clamp_ttl(ttl_ms, limits) : lease.ttl_ms;
  set_expiry(lease, false, ttl, now);
  change.events.push_back(make_event(EventType::renewed, key, lease, now));
  change.state_dirty = true;
  return {HolderStatus::ok, NotHolderReason::free, lease.token};
}

HolderOutcome release(KeyState& state, std::string_view key, const HolderParams& params, Millis now,
                      Change& change) {
  expire_if_due(state, key, now, change);
  if (!state.lease) return {HolderStatus::noop, NotHolderReason::free, std::nullopt};
  if (auto refused = refuse_unless_holder(state, params)) return *refused;
  Token token = state.lease->token;
  end_tenure(state, key, EndReason::released, now, now, change);
  return {HolderStatus::ok, NotHolderReason::free, token};
}

HolderOutcome revoke(KeyState& state, std::string_view key, const Revocation& revocation,
                     Millis now, Change& change) {
  expire_if_due(state, key, now, change);
  if (!state.lease) return {HolderStatus::not_holder, NotHolderReason::free, std::nullopt};
  Token token = state.lease->token;
  end_tenure(state, key, EndReason::revoked, now, now, change, revocation);
  return {HolderStatus::ok, NotHolderReason::free, token};
}

HolderOutcome check(KeyState& state, std::string_view key, Token token,
                    std::optional<std::string_view> owner, Millis now, Change& change) {
  expire_if_due(state, key, now, change);
  if (state.lease && state.lease->token == token && (!owner || *owner == state.lease->owner)) {
    return {HolderStatus::ok, NotHolderReason::free, token};
  }
  if (state.lease) {
    bool other_owner = owner && *owner != state.lease->owner;
    return {HolderStatus::not_holder,
            other_owner ? NotHolderReason::held_by_other : NotHolderReason::token_mismatch,
            std::nullopt};
  }
  bool ran_out = state.last_end == EndReason::expired && state.last_token == token &&
                 (!owner || *owner == state.last_owner);
  return {HolderStatus::not_holder, ran_out ? NotHolderReason::expired : NotHolderReason::free,
          std::nullopt};
}

bool release_on_disconnect(KeyState& state, std::string_view key, ConnId conn, Millis now,
                           Change& change) {
  expire_if_due(state, key, now, change);
  if (!state.lease || conn == 0 || state.lease->conn != conn) return false;
  if (!state.lease->release_on_disconnect) {
    state.lease->conn = 0;  // nobody left to tell of a loss
    return false;
  }
  end_tenure(state, key, EndReason::released, now, now, change);
  return true;
}

}  // namespace tenure
