// Real timers on the system clock: short TTLs, generous bounds.
#include <catch2/catch.hpp>
#include <thread>

#include "tests/unit/engine_fixture.hpp"
#include "tests/unit/event_recorder.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

TEST_CASE("real-timer expiry fires within a generous bound and publishes the event", "[timer]") {
  SystemClock clock;
  EngineFixture f(EngineConfig{}, &clock);
  auto recorder = std::make_shared<test::EventRecorder>();
  f.engine().events().subscribe(recorder);
  auto started = std::chrono::steady_clock::now();
  f.acquire("k", "a", 200);
  // Nobody touches the key: only the timer can end the tenure.
  REQUIRE(recorder->wait_for(EventType::expired, "k", std::chrono::seconds(5)));
  // Not early. The lease clock counts whole milliseconds, so the acquire's time stamp may be up
  // to 1 ms before the real moment: 199 ms is the bound (CI once saw 199.66 ms against 200).
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(199));
  auto events = recorder->events();
  REQUIRE(events.size() == 2);
  CHECK(events[1].type == EventType::expired);
  CHECK(events[1].at >= *events[1].expires_at);
  // Counted once the key's actor hears the write is durable, just after watchers do.
  auto counted = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (f.engine().stats().expired == 0 && std::chrono::steady_clock::now() < counted) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(f.engine().stats().expired == 1);
}

TEST_CASE("a renewed lease is not expired at its old deadline", "[timer]") {
  SystemClock clock;
  EngineFixture f(EngineConfig{}, &clock);
  auto recorder = std::make_shared<test::EventRecorder>();
  f.engine().events().subscribe(recorder);
  // Wide margins: the renew must land before the old deadline even if this thread oversleeps
  // on a loaded machine, and the wait must outlast that deadline.
  f.acquire("k", "a", 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  REQUIRE(f.renew("k", "a", 3000).status == HolderStatus::ok);
  CHECK_FALSE(recorder->wait_for(EventType::expired, "k", std::chrono::milliseconds(1200)));
  CHECK(f.get("k").lease);
}

TEST_CASE("many leases due at once all expire", "[timer]") {
  SystemClock clock;
  EngineConfig config;
  config.sync = false;  // timers are the subject here, not fsync: keep it quick on a busy disk
  EngineFixture f(config, &clock);
  auto recorder = std::make_shared<test::EventRecorder>();
  f.engine().events().subscribe(recorder);
  constexpr int kLeases = 3000;
  for (int i = 0; i < kLeases; ++i) f.acquire("storm/" + std::to_string(i), "o", 100);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (f.engine().stats().expired < kLeases && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(f.engine().stats().expired == kLeases);
  CHECK(f.engine().stats().live_leases == 0);
  CHECK(f.list("storm/").leases.empty());
}
