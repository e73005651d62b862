// The pure state machine: no ledger, no threads, time passed in.
#include "core/lease_machine.hpp"

#include <catch2/catch.hpp>

using namespace tenure;

namespace {

AcquireParams params(const std::string& owner, Millis ttl = 1000) {
  AcquireParams p;
  p.owner = owner;
  p.ttl_ms = ttl;
  p.principal = 1000;
  return p;
}

}  // namespace

TEST_CASE("ttl is clamped into the server's bounds and defaults to 15 minutes", "[core]") {
  Limits limits;
  CHECK(clamp_ttl(std::nullopt, limits) == 900'000);
  CHECK(clamp_ttl(1, limits) == 10);
  CHECK(clamp_ttl(100'000'000'000, limits) == 86'400'000);
  CHECK(clamp_ttl(5000, limits) == 5000);
}

TEST_CASE("a fresh acquire records a tenure start and an acquired event", "[core]") {
  KeyState state;
  Change change;
  auto out = acquire(state, "k", params("a"), 100, Limits{}, change);
  CHECK(out.status == AcquireStatus::acquired);
  CHECK(out.fresh);
  REQUIRE(state.lease);
  CHECK(state.lease->token == 1);
  CHECK(*state.lease->expires_at == 1100);
  REQUIRE(change.events.size() == 1);
  CHECK(change.events[0].type == EventType::acquired);
  REQUIRE(change.tenures.size() == 1);
  CHECK_FALSE(change.tenures[0].ended_at);
  CHECK(change.state_dirty);
}

TEST_CASE("a lease is expired at exactly its deadline", "[core]") {
  KeyState state;
  Change change;
  acquire(state, "k", params("a", 1000), 0, Limits{}, change);
  Change at_999;
  expire_if_due(state, "k", 999, at_999);
  CHECK(at_999.empty());
  Change at_1000;
  expire_if_due(state, "k", 1000, at_1000);
  CHECK_FALSE(state.lease);
  REQUIRE(at_1000.events.size() == 1);
  CHECK(at_1000.events[0].type == EventType::expired);
  CHECK(*at_1000.tenures[0].end == EndReason::expired);
  CHECK(*at_1000.tenures[0].ended_at == 1000);
}

TEST_CASE("an idempotent acquire from another principal is forbidden", "[core]") {
  KeyState state;
  Change change;
  acquire(state, "k", params("a"), 0, Limits{}, change);
  auto other = params("a");
  other.principal = 2000;
  CHECK(acquire(state, "k", other, 1, Limits{}, change).status == AcquireStatus::forbidden);
  other.admin = true;
  CHECK(acquire(state, "k", other, 1, Limits{}, change).status == AcquireStatus::acquired);
}

TEST_CASE("lock-delay is bounded by the server's maximum", "[core]") {
  KeyState state;
  Change change;
  auto p = params("a", 100);
  p.lock_delay_ms = 10'000'000;
  Limits limits;
  limits.max_lock_delay = 500;
  acquire(state, "k", p, 0, limits, change);
  Change c2;
  expire_if_due(state, "k", 100, c2);
  CHECK(state.lock_until == 600);
}

TEST_CASE("check names the reason a token is not the live tenure", "[core]") {
  KeyState state;
  Change change;
  acquire(state, "k", params("a", 100), 0, Limits{}, change);
  CHECK(check(state, "k", 1, std::nullopt, 50, change).status == HolderStatus::ok);
  CHECK(check(state, "k", 1, std::string("a"), 50, change).status == HolderStatus::ok);
  CHECK(check(state, "k", 2, std::nullopt, 50, change).reason == NotHolderReason::token_mismatch);
  CHECK(check(state, "k", 1, std::string("b"), 50, change).reason ==
        NotHolderReason::held_by_other);
  CHECK(check(state, "k", 1, std::nullopt, 100, change).reason == NotHolderReason::expired);
  CHECK(check(state, "k", 7, std::nullopt, 100, change).reason == NotHolderReason::free);
}

TEST_CASE("release on disconnect ends only connection-bound leases of that connection", "[core]") {
  KeyState state;
  Change change;
  auto p = params("a");
  p.conn = 7;
  p.release_on_disconnect = true;
  acquire(state, "k", p, 0, Limits{}, change);
  Change other;
  CHECK_FALSE(release_on_disconnect(state, "k", 8, 10, other));
  CHECK(state.lease);
  Change mine;
  CHECK(release_on_disconnect(state, "k", 7, 10, mine));
  CHECK_FALSE(state.lease);
  CHECK(mine.events.at(0).type == EventType::released);
}

TEST_CASE("a re-acquire on another connection names the one no longer told of a loss", "[core]") {
  KeyState state;
  Change first;
  auto p = params("a");
  p.conn = 7;
  acquire(state, "k", p, 0, Limits{}, first);
  CHECK(first.lost.empty());
  Change same;
  acquire(state, "k", p, 5, Limits{}, same);
  CHECK(same.lost.empty());
  Change moved;
  p.conn = 8;
  acquire(state, "k", p, 10, Limits{}, moved);
  REQUIRE(moved.lost.size() == 1);
  CHECK(moved.lost[0].conn == 7);
  CHECK(moved.events.at(moved.lost[0].event_index).type == EventType::renewed);
  CHECK(state.lease->conn == 8);
}
