// The FIFO wait queue and lock-delay.
#include <catch2/catch.hpp>

#include "tests/unit/engine_fixture.hpp"
#include "tests/unit/event_recorder.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

namespace {

std::future<AcquireResult> acquire_async(EngineFixture& f, const std::string& key,
                                         const std::string& owner, Millis wait_ms,
                                         ConnId conn = 0) {
  auto promise = std::make_shared<std::promise<AcquireResult>>();
  auto future = promise->get_future();
  AcquireRequest r;
  r.key = key;
  r.params.owner = owner;
  r.params.ttl_ms = 1000;
  r.wait_ms = wait_ms;
  r.caller = f.caller();
  r.caller.conn = conn;
  f.engine().acquire(std::move(r), [promise](AcquireResult res) { promise->set_value(res); });
  return future;
}

bool ready(std::future<AcquireResult>& f) {
  return f.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready;
}

}  // namespace

TEST_CASE("waiters are served FIFO and the hand-over is atomic", "[waiters]") {
  EngineFixture f;
  auto recorder = std::make_shared<test::EventRecorder>();
  f.engine().events().subscribe(recorder);
  f.acquire("k", "holder", 1000);
  Millis queued_at = f.clock().now();
  auto first = acquire_async(f, "k", "w1", 60'000);
  f.clock().advance(3);
  auto second = acquire_async(f, "k", "w2", 60'000);
  GetResult queue = f.get("k");
  CHECK(queue.waiters == 2);
  REQUIRE(queue.waiting.size() == 2);
  CHECK(queue.waiting[0].owner == "w1");
  CHECK(queue.waiting[0].since == queued_at);
  CHECK(queue.waiting[1].owner == "w2");
  CHECK(queue.waiting[1].since == queued_at + 3);
  CHECK_FALSE(ready(first));
  // A newcomer without wait does not overtake the queue.
  CHECK(f.acquire("k", "intruder").status == AcquireStatus::held);

  f.release("k", "holder");
  auto got = first.get();
  REQUIRE(got.status == AcquireStatus::acquired);
  CHECK(got.lease->owner == "w1");
  CHECK(got.lease->token == 2);
  CHECK_FALSE(ready(second));
  CHECK(f.get("k").lease->owner == "w1");

  // On expiry too: the timer's turn ends w1 and starts w2's tenure in one write.
  f.clock().advance(1000);
  f.expire_due();
  auto got2 = second.get();
  REQUIRE(got2.status == AcquireStatus::acquired);
  CHECK(got2.lease->token == 3);
  // No event of another tenure sits between the end and the hand-over.
  auto events = recorder->events();
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    if (events[i].type == EventType::released || events[i].type == EventType::expired) {
      CHECK(events[i + 1].type == EventType::acquired);
      CHECK(events[i + 1].revision == events[i].revision + 1);
    }
  }
}

TEST_CASE("a waiter whose wait runs out gets held", "[waiters]") {
  EngineFixture f;
  f.acquire("k", "holder", 10'000);
  auto waiter = acquire_async(f, "k", "w", 500);
  f.clock().advance(499);
  f.expire_due();
  CHECK_FALSE(ready(waiter));
  f.clock().advance(1);
  f.expire_due();
  auto r = waiter.get();
  CHECK(r.status == AcquireStatus::held);
  CHECK(r.lease->owner == "holder");
  CHECK(f.get("k").waiters == 0);
}

TEST_CASE("a key that comes free at the moment a wait runs out goes to that waiter", "[waiters]") {
  EngineFixture f;
  f.acquire("k", "holder", 500);
  auto first = acquire_async(f, "k", "w1", 500);
  auto second = acquire_async(f, "k", "w2", 500);
  f.clock().advance(500);  // the holder's deadline and both waits' ends
  f.expire_due();
  auto got = first.get();
  REQUIRE(got.status == AcquireStatus::acquired);
  CHECK(got.lease->owner == "w1");
  CHECK(got.lease->token == 2);
  // The wait behind it ran out with the key held: by the first waiter, not a lock-delay.
  auto held = second.get();
  CHECK(held.status == AcquireStatus::held);
  REQUIRE(held.lease);
  CHECK(held.lease->owner == "w1");
  CHECK(f.get("k").waiters == 0);
}

TEST_CASE("waiters of the owner a hand-over makes holder get the lease as its re-acquires",
          "[waiters]") {
  EngineFixture f;
  auto recorder = std::make_shared<test::EventRecorder>();
  f.engine().events().subscribe(recorder);
  f.acquire("k", "holder", 10'000);
  auto first = acquire_async(f, "k", "x", 60'000, 41);
  auto other = acquire_async(f, "k", "y", 60'000, 42);
  auto again = acquire_async(f, "k", "x", 60'000, 43);  // the same owner on another connection
  CHECK(f.get("k").waiters == 3);
  f.clock().advance(5);
  f.release("k", "holder");
  auto got = first.get();
  REQUIRE(got.status == AcquireStatus::acquired);
  CHECK(got.fresh);
  REQUIRE(ready(again));
  auto joined = again.get();
  REQUIRE(joined.status == AcquireStatus::acquired);
  CHECK_FALSE(joined.fresh);
  CHECK(joined.lease->token == got.lease->token);
  CHECK_FALSE(ready(other));  // y still waits, first in the queue now
  CHECK(f.get("k").waiters == 1);
  auto events = recorder->events();
  REQUIRE(events.size() >= 2);
  CHECK(events[events.size() - 2].type == EventType::acquired);
  CHECK(events.back().type == EventType::renewed);
  CHECK(events.back().owner == "x");
}

TEST_CASE("a waiter that disconnects leaves the queue", "[waiters]") {
  EngineFixture f;
  f.acquire("k", "holder", 10'000);
  auto gone = acquire_async(f, "k", "gone", 60'000, 42);
  auto stays = acquire_async(f, "k", "stays", 60'000, 43);
  CHECK(f.get("k").waiters == 2);
  f.engine().disconnect(42, {"k"});
  CHECK(f.get("k").waiters == 1);
  f.release("k", "holder");
  CHECK(stays.get().lease->owner == "stays");
}

TEST_CASE("lock-delay blocks re-acquire after expiry but not after release", "[waiters]") {
  EngineFixture f;
  SECTION("after expiry") {
    f.acquire("k", "a", 1000, 0, 5000);
    f.clock().advance(1000);
    auto r = f.acquire("k", "b");
    CHECK(r.status == AcquireStatus::lock_delay);
    CHECK(r.retry_after_ms == 5000);
    CHECK(r.last_token == 1);
    CHECK(f.get("k").lock_delay_until == f.clock().now() + 5000);
    f.clock().advance(4999);
    CHECK(f.acquire("k", "b").status == AcquireStatus::lock_delay);
    f.clock().advance(1);
    CHECK(f.acquire("k", "b").status == AcquireStatus::acquired);
  }
  SECTION("after revoke") {
    f.acquire("k", "a", 1000, 0, 5000);
    f.revoke("k");
    CHECK(f.acquire("k", "b").status == AcquireStatus::lock_delay);
  }
  SECTION("after release") {
    f.acquire("k", "a", 1000, 0, 5000);
    f.release("k", "a");
    CHECK(f.get("k").lock_delay_until == 0);
    CHECK(f.acquire("k", "b").status == AcquireStatus::acquired);
  }
  SECTION("waiters wait it out") {
    f.acquire("k", "a", 1000, 0, 5000);
    auto waiter = acquire_async(f, "k", "w", 60'000);
    f.clock().advance(1000);
    f.expire_due();
    CHECK_FALSE(ready(waiter));
    f.clock().advance(5000);
    f.expire_due();
    auto r = waiter.get();
    CHECK(r.status == AcquireStatus::acquired);
    CHECK(r.lease->token == 2);
  }
}

TEST_CASE("a connection-bound lease is released when its connection closes", "[waiters]") {
  EngineFixture f;
  AcquireRequest r;
  r.key = "k";
  r.params.owner = "a";
  r.params.release_on_disconnect = true;
  r.caller = f.caller();
  r.caller.conn = 9;
  REQUIRE(test::call(f.engine(), &Engine::acquire, r).status == AcquireStatus::acquired);
  f.engine().disconnect(9, {"k"});
  CHECK_FALSE(f.get("k").lease);
  CHECK(f.history("k").tenures.at(0).end == EndReason::released);
}

TEST_CASE("the acquiring connection is told when its lease is lost", "[waiters]") {
  EngineFixture f;
  auto listener = std::make_shared<test::LostListener>();
  auto lost = listener->lost.get_future();
  ConnId conn = f.engine().connect(listener);
  REQUIRE(f.acquire_on("k", "a", 100, conn).status == AcquireStatus::acquired);
  f.clock().advance(100);
  f.expire_due();
  REQUIRE(lost.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  Event e = lost.get();
  CHECK(e.type == EventType::expired);
  CHECK(e.token == 1);
  CHECK(e.revision == 2);
}

TEST_CASE("each of two tenures lost in one step is told to its own connection", "[waiters]") {
  EngineFixture f;
  auto holder = std::make_shared<test::LostListener>();
  auto waiter = std::make_shared<test::LostListener>();
  auto holder_lost = holder->lost.get_future();
  auto waiter_lost = waiter->lost.get_future();
  ConnId holder_conn = f.engine().connect(holder);
  ConnId waiter_conn = f.engine().connect(waiter);
  REQUIRE(f.acquire_on("k", "a", 100, holder_conn).status == AcquireStatus::acquired);
  auto handed = acquire_async(f, "k", "b", 60'000, waiter_conn);
  // No timer fires: the revoke's own turn expires the lease, hands the key to the waiter, and
  // revokes the waiter's new tenure, all in one step.
  f.clock().advance(100);
  HolderResult revoked = f.revoke("k");
  REQUIRE(revoked.status == HolderStatus::ok);
  CHECK(revoked.token == 2);
  CHECK(handed.get().status == AcquireStatus::acquired);
  REQUIRE(holder_lost.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  Event first = holder_lost.get();
  CHECK(first.type == EventType::expired);
  CHECK(first.token == 1);
  REQUIRE(waiter_lost.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  Event second = waiter_lost.get();
  CHECK(second.type == EventType::revoked);
  CHECK(second.token == 2);
  CHECK(second.revision > first.revision);
}
