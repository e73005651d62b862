// Lease rules through the real engine (actors + RocksDB), on a MockClock.
#include <catch2/catch.hpp>

#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

TEST_CASE("acquire succeeds when unheld with token 1", "[engine]") {
  EngineFixture f;
  auto r = f.acquire("pr/1051", "alice", 5000);
  REQUIRE_FALSE(r.error);
  CHECK(r.status == AcquireStatus::acquired);
  CHECK(r.fresh);
  REQUIRE(r.lease);
  CHECK(r.lease->token == 1);
  CHECK(r.lease->owner == "alice");
  CHECK(r.lease->ttl_ms == 5000);
  CHECK(*r.lease->expires_at == f.clock().now() + 5000);
  CHECK(r.revision == 1);
}

TEST_CASE("contended acquire gets held with the holder", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice");
  auto r = f.acquire("k", "bob");
  CHECK(r.status == AcquireStatus::held);
  REQUIRE(r.lease);
  CHECK(r.lease->owner == "alice");
  CHECK(r.lease->token == 1);
}

TEST_CASE("expired lease is re-acquirable with token+1", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice", 1000);
  f.clock().advance(1000);
  auto r = f.acquire("k", "bob");
  CHECK(r.status == AcquireStatus::acquired);
  CHECK(r.fresh);
  CHECK(r.lease->token == 2);
}

TEST_CASE("same-owner acquire is idempotent: same token, new expiry", "[engine]") {
  EngineFixture f;
  auto first = f.acquire("k", "alice", 1000);
  f.clock().advance(400);
  auto again = f.acquire("k", "alice", 3000);
  CHECK(again.status == AcquireStatus::acquired);
  CHECK_FALSE(again.fresh);
  CHECK(again.lease->token == first.lease->token);
  CHECK(*again.lease->expires_at == f.clock().now() + 3000);
  CHECK(again.revision == first.revision + 1);  // recorded as a renewed event
}

TEST_CASE("renew extends and keeps the token", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice", 1000);
  f.clock().advance(900);
  auto r = f.renew("k", "alice");
  CHECK(r.status == HolderStatus::ok);
  CHECK(r.lease->token == 1);
  CHECK(*r.lease->expires_at == f.clock().now() + 1000);
  f.clock().advance(900);
  CHECK(f.get("k").lease);
  auto longer = f.renew("k", "alice", 5000, 1);
  CHECK(*longer.lease->expires_at == f.clock().now() + 5000);
}

TEST_CASE("renew by non-holder, after expiry, or with a wrong token is not_holder", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice", 1000);
  SECTION("by another owner") {
    auto r = f.renew("k", "bob");
    CHECK(r.status == HolderStatus::not_holder);
    CHECK(r.reason == NotHolderReason::held_by_other);
    CHECK(r.lease->owner == "alice");
  }
  SECTION("with a wrong token") {
    auto r = f.renew("k", "alice", std::nullopt, 99);
    CHECK(r.status == HolderStatus::not_holder);
    CHECK(r.reason == NotHolderReason::token_mismatch);
  }
  SECTION("after expiry") {
    f.clock().advance(1000);
    auto r = f.renew("k", "alice");
    CHECK(r.status == HolderStatus::not_holder);
    CHECK(r.reason == NotHolderReason::expired);
    CHECK_FALSE(r.lease);
  }
  SECTION("on a free key") {
    auto r = f.renew("never", "alice");
    CHECK(r.reason == NotHolderReason::free);
  }
}

TEST_CASE("renew or release of another principal's lease is forbidden", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice", 1000, 0, 0, 1000);
  CHECK(f.renew("k", "alice", std::nullopt, std::nullopt, 2000).error->code == errc::forbidden);
  CHECK(f.release("k", "alice", std::nullopt, 2000).error->code == errc::forbidden);
  CHECK(f.get("k").lease);
  CHECK(f.release("k", "alice", std::nullopt, 0).status == HolderStatus::ok);  // root may
}

TEST_CASE("release frees the key", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice");
  auto r = f.release("k", "alice");
  CHECK(r.status == HolderStatus::ok);
  CHECK(*r.token == 1);
  CHECK(r.revision == 2);
  CHECK_FALSE(f.get("k").lease);
  CHECK(f.acquire("k", "bob").status == AcquireStatus::acquired);
}

TEST_CASE("release is idempotent when absent", "[engine]") {
  EngineFixture f;
  auto r = f.release("k", "alice");
  CHECK(r.status == HolderStatus::noop);
  CHECK_FALSE(r.token);
  f.acquire("k", "alice");
  f.release("k", "alice");
  CHECK(f.release("k", "alice").status == HolderStatus::noop);
}

TEST_CASE("release by non-holder is refused", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice");
  auto r = f.release("k", "bob");
  CHECK(r.status == HolderStatus::not_holder);
  CHECK(r.reason == NotHolderReason::held_by_other);
  auto wrong_token = f.release("k", "alice", 5);
  CHECK(wrong_token.reason == NotHolderReason::token_mismatch);
  CHECK(f.get("k").lease);
}

TEST_CASE("release of an expired lease by anyone succeeds", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice", 100);
  f.clock().advance(100);
  CHECK(f.release("k", "bob").status == HolderStatus::noop);
  CHECK(f.release("k", "alice").status == HolderStatus::noop);
}

TEST_CASE("open-ended lease never expires", "[engine]") {
  EngineFixture f;
  auto r = f.acquire_open_ended("desk", "alice");
  CHECK_FALSE(r.lease->expires_at);
  f.clock().advance(365LL * 86'400'000);
  f.expire_due();
  CHECK(f.get("desk").lease);
  CHECK(f.acquire("desk", "bob").status == AcquireStatus::held);
  auto renewed = f.renew("desk", "alice");
  CHECK(renewed.status == HolderStatus::noop);
  CHECK(renewed.revision == f.engine().revision());
}

TEST_CASE("token is monotonic across holders: a, expire, b, expire, a gives 1, 2, 3", "[engine]") {
  EngineFixture f;
  CHECK(f.acquire("k", "a", 100).lease->token == 1);
  f.clock().advance(100);
  CHECK(f.acquire("k", "b", 100).lease->token == 2);
  f.clock().advance(100);
  CHECK(f.acquire("k", "a", 100).lease->token == 3);
}

TEST_CASE("token does not reset after release", "[engine]") {
  EngineFixture f;
  f.acquire("k", "a");
  f.release("k", "a");
  CHECK(f.get("k").last_token == 1);
  CHECK(f.acquire("k", "a").lease->token == 2);
}

TEST_CASE("token does not reset after expiry and reads", "[engine]") {
  EngineFixture f;
  f.acquire("k", "a", 100);
  f.clock().advance(200);
  for (int i = 0; i < 3; ++i) {
    auto g = f.get("k");
    CHECK_FALSE(g.lease);
    CHECK(g.last_token == 1);
    CHECK(f.check("k", 1).status == HolderStatus::not_holder);
    f.history("k");
    f.list("");
  }
  CHECK(f.acquire("k", "b").lease->token == 2);
}

TEST_CASE("keepalive renews all of one owner's leases", "[engine]") {
  EngineFixture f;
  for (auto key : {"a", "b", "c"}) f.acquire(key, "alice", 1000);
  f.acquire("d", "bob", 1000);
  f.acquire("e", "alice", 1000, 0, 0, 2000);  // same owner name, another principal
  f.clock().advance(900);
  auto r = f.keepalive("alice");
  REQUIRE_FALSE(r.error);
  CHECK(r.count == 3);
  CHECK(r.revision == f.engine().revision());
  f.clock().advance(900);
  for (auto key : {"a", "b", "c"}) CHECK(f.get(key).lease);
  CHECK_FALSE(f.get("d").lease);
  CHECK_FALSE(f.get("e").lease);
  CHECK(f.keepalive("nobody").count == 0);
}

TEST_CASE("check answers the fencing question", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice", 1000);
  auto ok = f.check("k", 1, "alice");
  CHECK(ok.status == HolderStatus::ok);
  CHECK(*ok.lease->expires_at == f.clock().now() + 1000);
  CHECK(f.check("k", 2).reason == NotHolderReason::token_mismatch);
  CHECK(f.check("cold", 1).reason == NotHolderReason::free);
}

TEST_CASE("revoke ends the live tenure whoever holds it", "[engine]") {
  EngineFixture f;
  f.acquire("k", "alice");
  auto r = f.revoke("k");
  CHECK(r.status == HolderStatus::ok);
  CHECK(*r.token == 1);
  CHECK_FALSE(f.get("k").lease);
  CHECK(f.revoke("k").reason == NotHolderReason::free);
  // The ended tenure remembers who revoked it and why (§3 revoke).
  auto h = f.history("k");
  REQUIRE(h.tenures.size() == 1);
  CHECK(h.tenures[0].end == EndReason::revoked);
  CHECK(h.tenures[0].revocation.by == "uid:0");
  CHECK(h.tenures[0].revocation.reason == "test");
  RevokeRequest not_admin{"k", "", "uid:1000", f.caller(1000)};
  CHECK(test::call(f.engine(), &Engine::revoke, not_admin).error->code == errc::forbidden);
}

TEST_CASE("list pages through live leases in key order", "[engine]") {
  EngineFixture f;
  for (auto key : {"x/3", "x/1", "x/2", "y/1"}) f.acquire(key, "o", 1000);
  f.acquire("x/0", "o", 10);
  f.clock().advance(10);  // x/0 has run out: not listed, even before its timer fires
  auto page = f.list("x/", 2);
  REQUIRE(page.leases.size() == 2);
  CHECK(page.leases[0].key == "x/1");
  CHECK(page.leases[1].key == "x/2");
  REQUIRE(page.next);
  auto rest = f.list("x/", 2, *page.next);
  REQUIRE(rest.leases.size() == 1);
  CHECK(rest.leases[0].key == "x/3");
  CHECK_FALSE(rest.next);
  CHECK(f.list("").leases.size() == 4);
}

namespace {

// Takes and frees k0..k99, then holds "held".
void take_and_free_keys(EngineFixture& f) {
  for (int i = 0; i < 100; ++i) {
    std::string key = "k" + std::to_string(i);
    f.acquire(key, "o");
    f.release(key, "o");
    f.get(key);
  }
  f.acquire("held", "o");
}

}  // namespace

TEST_CASE("idle keys leave no actor behind once they are not among the most recent", "[engine]") {
  EngineConfig config;
  config.shards = 2;
  config.idle_keys = 20;  // 10 per shard
  EngineFixture f(config);
  take_and_free_keys(f);
  // Retirement runs on each key's shard after its reply; give the shards a moment.
  auto resident = [&] { return f.engine().stats().resident_keys; };
  for (int i = 0; i < 100 && resident() > 21; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(resident() <= 21);  // the held key and at most 10 idle ones per shard
  CHECK(resident() > 1);    // recently used keys stay, to be taken again without a ledger read
  CHECK(f.engine().stats().live_leases == 1);
  // A resident idle key answers from memory exactly as from its row.
  auto again = f.acquire("k99", "p");
  REQUIRE(again.status == AcquireStatus::acquired);
  CHECK(again.lease->token == 2);
}

TEST_CASE("with no idle keys kept, every idle key retires", "[engine]") {
  EngineConfig config;
  config.idle_keys = 0;
  EngineFixture f(config);
  take_and_free_keys(f);
  for (int i = 0; i < 100 && f.engine().stats().resident_keys > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(f.engine().stats().resident_keys == 1);
  CHECK(f.engine().stats().live_leases == 1);
}
