// What survives a restart: tokens, revisions, history, and expiry that happened while down.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/unit/engine_fixture.hpp"
#include "tests/unit/event_recorder.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

TEST_CASE("tokens and revision survive close and reopen", "[durability]") {
  EngineFixture f;
  f.acquire("k", "a");
  f.release("k", "a");
  f.acquire("k", "b", 60'000);
  Revision before = f.engine().revision();
  CHECK(before == 3);
  f.reopen();
  CHECK(f.engine().revision() == before);
  auto g = f.get("k");
  REQUIRE(g.lease);
  CHECK(g.lease->owner == "b");
  CHECK(g.lease->token == 2);
  CHECK(f.release("k", "b").revision == before + 1);
  CHECK(f.acquire("k", "c").lease->token == 3);
}

TEST_CASE("a lease that expired while closed is expired on reopen with its event", "[durability]") {
  EngineFixture f;
  f.acquire("k", "a", 1000);
  f.acquire("live", "a", 100'000);
  f.close();
  f.clock().advance(5000);
  f.open();
  CHECK_FALSE(f.get("k").lease);
  CHECK(f.get("live").lease);
  f.expire_due();
  std::vector<Event> events;
  REQUIRE(test::eventually([&] {
    events.clear();
    return f.engine().events_from(1, 100, events).ok() && events.size() == 3;
  }));
  CHECK(events[2].type == EventType::expired);
  CHECK(events[2].key == "k");
  CHECK(events[2].revision == 3);
  CHECK(f.history("k").tenures.at(0).end == EndReason::expired);
}

TEST_CASE("a restart serves at once and leaves its overdue leases to the timer", "[durability]") {
  EngineConfig config;
  config.manual_timers = true;  // the timer fires when the test says so
  EngineFixture f(config);
  constexpr int kOverdue = 100;
  for (int i = 0; i < kOverdue; ++i) f.acquire("overdue/" + std::to_string(i), "a", 1000);
  f.acquire("live", "a", 100'000);
  Revision before = f.engine().revision();
  f.close();
  f.clock().advance(5000);
  f.open();
  // Opening wrote nothing: ending a million overdue leases would keep a restart from serving
  // for seconds. Every operation finds them ended all the same (§4).
  CHECK(f.engine().revision() == before);
  CHECK(f.engine().stats().expired == 0);
  CHECK(f.list("overdue/").leases.empty());
  CHECK(f.list("live").leases.size() == 1);
  // The shard's timer ends them, as any storm, with their events.
  f.expire_due();
  REQUIRE(test::eventually([&] { return f.engine().stats().expired == kOverdue; }));
  CHECK(f.engine().revision() == before + kOverdue);
  CHECK(f.history("overdue/7").tenures.at(0).end == EndReason::expired);
  CHECK(f.get("live").lease);
}

TEST_CASE("connection-bound leases are released at start-up", "[durability]") {
  EngineFixture f;
  AcquireRequest r;
  r.key = "k";
  r.params.owner = "a";
  r.params.release_on_disconnect = true;
  r.caller = f.caller();
  r.caller.conn = 5;
  test::call(f.engine(), &Engine::acquire, r);
  f.reopen();
  CHECK_FALSE(f.get("k").lease);
  CHECK(f.history("k").tenures.at(0).end == EndReason::released);
}

TEST_CASE("history lists tenures newest first with end reasons", "[durability]") {
  EngineFixture f;
  f.acquire("k", "a", 100);
  f.release("k", "a");
  f.acquire("k", "b", 100);
  f.clock().advance(100);
  f.acquire("k", "c", 100);
  f.revoke("k");
  f.acquire("k", "d", 100);
  auto h = f.history("k");
  REQUIRE(h.tenures.size() == 4);
  CHECK(h.tenures[0].token == 4);
  CHECK_FALSE(h.tenures[0].end);
  CHECK(h.tenures[1].end == EndReason::revoked);
  CHECK(h.tenures[2].end == EndReason::expired);
  CHECK(h.tenures[3].end == EndReason::released);
  CHECK(h.tenures[3].owner == "a");
  auto page = f.history("k", 2);
  REQUIRE(page.next);
  CHECK(*page.next == 3);
  auto rest = f.history("k", 10, *page.next);
  REQUIRE(rest.tenures.size() == 2);
  CHECK(rest.tenures[0].token == 2);
}

TEST_CASE("history retention compacts old records without reissuing tokens", "[durability]") {
  EngineConfig config;
  config.history_keep = 3;
  EngineFixture f(config);
  for (int i = 0; i < 10; ++i) {
    f.acquire("k", "o");
    f.release("k", "o");
  }
  auto h = f.history("k");
  REQUIRE(h.tenures.size() == 3);
  CHECK(h.tenures[0].token == 10);
  CHECK(h.tenures[2].token == 8);
  f.reopen();
  CHECK(f.acquire("k", "o").lease->token == 11);
  // The live tenure comes from the lease row, on top of the kept ended ones.
  f.reopen();
  h = f.history("k");
  REQUIRE(h.tenures.size() == 4);
  CHECK(h.tenures[0].token == 11);
  CHECK_FALSE(h.tenures[0].end);
  CHECK(h.tenures[3].token == 8);
}

TEST_CASE("history older than the age limit is compacted at start-up", "[durability]") {
  EngineConfig config;
  config.history_max_age = 1000;
  EngineFixture f(config);
  f.acquire("k", "o");
  f.release("k", "o");
  f.clock().advance(2000);
  f.acquire("k", "o");
  f.release("k", "o");
  f.reopen();
  auto h = f.history("k");
  REQUIRE(h.tenures.size() == 1);
  CHECK(h.tenures[0].token == 2);
  CHECK(f.get("k").last_token == 2);
}

TEST_CASE("history answers as of its place among pipelined requests", "[durability]") {
  EngineFixture f;
  f.acquire("k", "a");
  // Pipelined: history, then release, without waiting; history must not see the release.
  std::promise<HistoryResult> history;
  std::promise<HolderResult> released;
  f.engine().history(HistoryRequest{"k", 10, 0, f.caller()},
                     [&](HistoryResult r) { history.set_value(std::move(r)); });
  f.engine().release(ReleaseRequest{"k", HolderParams{"a", std::nullopt, 0, false}, f.caller()},
                     [&](HolderResult r) { released.set_value(std::move(r)); });
  auto h = history.get_future().get();
  REQUIRE(h.tenures.size() == 1);
  CHECK_FALSE(h.tenures[0].end);
  CHECK(released.get_future().get().status == HolderStatus::ok);
  // And a history right after an uncommitted start sees the new tenure.
  std::promise<AcquireResult> acquired;
  std::promise<HistoryResult> after;
  AcquireRequest r;
  r.key = "k";
  r.params.owner = "b";
  r.caller = f.caller();
  f.engine().acquire(r, [&](AcquireResult res) { acquired.set_value(std::move(res)); });
  f.engine().history(HistoryRequest{"k", 1, 0, f.caller()},
                     [&](HistoryResult res) { after.set_value(std::move(res)); });
  auto a = after.get_future().get();
  REQUIRE(a.tenures.size() == 1);
  CHECK(a.tenures[0].token == 2);
  REQUIRE(a.next);
  CHECK(*a.next == 2);
  CHECK(acquired.get_future().get().lease->token == 2);
}

TEST_CASE("table files are written back a MiB at a time, not in one burst", "[durability]") {
  // A flush's writeback all at once held WAL syncs behind it (docs/benchmarks.md): RocksDB's
  // options file says what the ledger asked for.
  EngineFixture f;
  std::string options;
  for (const auto& entry : std::filesystem::directory_iterator(f.data_dir())) {
    if (entry.path().filename().string().rfind("OPTIONS-", 0) != 0) continue;
    std::ifstream in(entry.path());
    options.assign(std::istreambuf_iterator<char>(in), {});
  }
  REQUIRE_FALSE(options.empty());
  CHECK(options.find("\n  bytes_per_sync=1048576\n") != std::string::npos);
}
