// Watches: filtering, replay from the ledger, the seam with live events, compaction.
#include "actors/watch.hpp"

#include <catch2/catch.hpp>

#include "tests/support/watch_collector.hpp"
#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::Collector;
using tenure::test::EngineFixture;

TEST_CASE("a prefix watch sees every event type in revision order", "[watch]") {
  EngineFixture f;
  auto sink = std::make_shared<Collector>();
  Revision current = 0;
  auto w = f.engine().watch(WatchFilter{"pr/", std::nullopt}, std::nullopt, sink, current);
  CHECK(current == 0);
  f.acquire("pr/1", "a", 100);
  f.acquire("other", "a", 100);  // filtered out
  f.renew("pr/1", "a");
  f.release("pr/1", "a");
  f.acquire("pr/2", "a", 100);
  f.revoke("pr/2");
  f.acquire("pr/3", "a", 100);
  f.clock().advance(100);
  f.expire_due();
  // Wait for all seven: the expiry may already be delivered when the first six are.
  auto events = sink->wait_for(7);
  REQUIRE(events.size() == 7);
  std::vector<EventType> types;
  for (auto& e : events) types.push_back(e.type);
  CHECK(types == std::vector<EventType>{EventType::acquired, EventType::renewed,
                                        EventType::released, EventType::acquired,
                                        EventType::revoked, EventType::acquired,
                                        EventType::expired});
  for (std::size_t i = 1; i < events.size(); ++i) {
    CHECK(events[i].revision > events[i - 1].revision);
  }
  f.engine().unwatch(w);
}

TEST_CASE("a key watch sees only that key", "[watch]") {
  EngineFixture f;
  auto sink = std::make_shared<Collector>();
  Revision current = 0;
  f.engine().watch(WatchFilter{"", std::string("a")}, std::nullopt, sink, current);
  f.acquire("ab", "o");
  f.acquire("a", "o");
  auto events = sink->wait_for(1);
  REQUIRE(events.size() == 1);
  CHECK(events[0].key == "a");
}

TEST_CASE("resuming from a revision under concurrent writes has no gap and no duplicate",
          "[watch]") {
  EngineConfig config;
  config.sync = false;
  EngineFixture f(config);
  for (int i = 0; i < 3000; ++i) f.acquire("r/" + std::to_string(i), "o");
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) f.acquire("w/" + std::to_string(i), "o");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto sink = std::make_shared<Collector>();
  Revision current = 0;
  f.engine().watch(WatchFilter{}, Revision{5}, sink, current);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop = true;
  writer.join();
  Revision last = f.engine().revision();
  auto events = sink->wait_for(last - 4);
  REQUIRE(events.size() == last - 4);
  for (std::size_t i = 0; i < events.size(); ++i) CHECK(events[i].revision == 5 + i);
}

TEST_CASE("a watch from a revision the ledger no longer keeps is compacted", "[watch]") {
  EngineConfig config;
  config.events_keep = 10;
  config.sync = false;
  EngineFixture f(config);
  for (int i = 0; i < 5000; ++i) f.acquire("c/" + std::to_string(i), "o");
  REQUIRE(f.engine().oldest_revision() > 1);
  auto sink = std::make_shared<Collector>();
  Revision current = 0;
  f.engine().watch(WatchFilter{}, Revision{1}, sink, current);
  auto oldest = sink->compacted();
  REQUIRE(oldest);
  CHECK(*oldest == f.engine().oldest_revision());
}

TEST_CASE("events published past a gap end every watch compacted, never delivered with the gap",
          "[watch]") {
  EventBus bus;
  bus.published_through(2);
  auto sink = std::make_shared<Collector>();
  auto watch = std::make_shared<Watch>(7, WatchFilter{"k/", std::nullopt}, sink);
  bus.subscribe(watch, WatchFilter{"k/", std::nullopt});
  auto batch = [](Revision from, Revision to) {
    Events events;
    for (Revision r = from; r <= to; ++r) {
      Event e;
      e.revision = r;
      e.key = "k/" + std::to_string(r);
      events.push_back(e);
    }
    return events;
  };
  Events first = batch(3, 4);
  bus.publish({&first});
  Events after_gap = batch(9, 10);  // 5 to 8 never reached the bus
  bus.publish({&after_gap});
  Events later = batch(11, 11);
  bus.publish({&later});
  REQUIRE(sink->compacted() == Revision{9});
  auto events = sink->wait_for(2);
  REQUIRE(events.size() == 2);
  CHECK(events[0].revision == 3);
  CHECK(events[1].revision == 4);
  CHECK(bus.subscribers() == 0);
}
