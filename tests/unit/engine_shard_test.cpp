// The shard model: what a shard's turn writes, and work that spans shards.
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/support/gated_wal.hpp"
#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;
using tenure::test::eventually;

TEST_CASE("leases due together expire in one write per shard", "[shards]") {
  constexpr int kLeases = 1000;
  EngineConfig config;
  config.shards = 2;
  config.expiry_batch = kLeases;  // a shard's whole share in one turn
  EngineFixture f(config);
  auto acquired = f.acquire_burst("storm/", kLeases, 1000);
  for (const auto& r : acquired) REQUIRE(r.status == AcquireStatus::acquired);
  std::uint64_t groups = f.engine().stats().writer.groups;
  f.clock().advance(1000);
  f.expire_due();
  REQUIRE(eventually([&] { return f.engine().stats().expired == kLeases; }));
  // Each shard's timer turn ends all its due leases and hands their writes over as one group.
  CHECK(f.engine().stats().writer.groups - groups <= config.shards);
  CHECK(f.engine().stats().live_leases == 0);
}

TEST_CASE("a backlog of due leases is ended a batch per commit, not all at once", "[shards]") {
  test::SyncGate gate;
  auto fs = std::make_shared<test::GatedFileSystem>(rocksdb::FileSystem::Default(), gate);
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  EngineConfig config;
  config.shards = 2;
  config.manual_timers = true;
  config.ledger_env = env.get();
  config.expiry_batch = 1024;
  EngineFixture f(config);
  struct Open {
    test::SyncGate& gate;
    ~Open() { gate.set(false, false); }  // before the engine stops, whatever failed
  } open{gate};
  constexpr int kLeases = 6000;  // about three turns' worth per shard, all due at once
  auto acquired = f.acquire_burst("backlog/", kLeases, 1000);
  for (const auto& r : acquired) REQUIRE(r.status == AcquireStatus::acquired);
  std::uint64_t groups = f.engine().stats().writer.groups;
  std::uint64_t ops = f.engine().stats().writer.ops;
  f.clock().advance(2000);
  gate.set(true, false);  // every WAL sync waits
  f.expire_due();
  REQUIRE(gate.wait_for_sync());
  // Time for the rest of the backlog to be staged and handed over, had each shard not waited
  // for its first batch's commit: a request's write would then queue behind all of it. (A
  // shard may also be held by committing its batch on its own thread; the other is not.)
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(f.engine().stats().writer.groups - groups <= config.shards);
  // ... each of them one batch, not the shard's whole share.
  CHECK(f.engine().stats().writer.ops - ops <= config.shards * config.expiry_batch);
  gate.set(false, false);
  REQUIRE(eventually([&] { return f.engine().stats().expired == kLeases; }));
  CHECK(f.engine().stats().live_leases == 0);
}

TEST_CASE("keepalive renews an owner's keys in every shard", "[shards]") {
  EngineConfig config;
  config.shards = 4;
  EngineFixture f(config);
  for (int i = 0; i < 40; ++i) f.acquire("ka/" + std::to_string(i), "owner", 1000);
  f.acquire("other", "someone-else", 1000);
  f.clock().advance(500);
  auto kept = f.keepalive("owner", 5000);
  REQUIRE_FALSE(kept.error);
  CHECK(kept.count == 40);
  f.clock().advance(1000);
  f.expire_due();
  for (int i = 0; i < 40; ++i) CHECK(f.get("ka/" + std::to_string(i)).lease);
  CHECK_FALSE(f.get("other").lease);
}

namespace {

// Collects replies that engine threads deliver, in the order they arrive.
template <typename Result>
struct Replies {
  std::mutex mutex;
  std::vector<std::pair<int, Result>> got;

  Reply<Result> to(int tag) {
    return [this, tag](Result result) {
      std::lock_guard lock(mutex);
      got.emplace_back(tag, std::move(result));
    };
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return got.size();
  }
};

AcquireRequest acquire_request(const EngineFixture& f, std::string key, std::string owner) {
  AcquireRequest r;
  r.key = std::move(key);
  r.params.owner = std::move(owner);
  r.params.ttl_ms = 1000;
  r.caller = f.caller();
  return r;
}

}  // namespace

TEST_CASE("a burst's requests reach each shard in one message", "[shards]") {
  EngineConfig config;
  config.shards = 2;
  EngineFixture f(config);
  constexpr int kRequests = 64;
  Replies<AcquireResult> replies;
  std::uint64_t posts = f.engine().stats().shard_posts;
  {
    Engine::Burst burst(f.engine());
    for (int i = 0; i < kRequests; ++i) {
      f.engine().acquire(acquire_request(f, "burst/" + std::to_string(i), "o"), replies.to(i));
    }
    CHECK(f.engine().stats().shard_posts == posts);  // held until the burst closes
  }
  REQUIRE(eventually([&] { return replies.size() == kRequests; }));
  for (const auto& [tag, result] : replies.got) CHECK(result.status == AcquireStatus::acquired);
  // Per shard: one message with its requests, one with the commit of their writes.
  CHECK(f.engine().stats().shard_posts - posts <= 2 * config.shards);
}

TEST_CASE("a burst keeps each key's requests, and a disconnect after them, in order", "[shards]") {
  EngineConfig config;
  config.shards = 4;
  EngineFixture f(config);
  ConnId conn = f.engine().connect({});
  Replies<AcquireResult> acquires;
  Replies<HolderResult> releases;
  {
    Engine::Burst burst(f.engine());
    f.engine().acquire(acquire_request(f, "order/k", "a"), acquires.to(0));
    f.engine().acquire(acquire_request(f, "order/k", "b"), acquires.to(1));
    f.engine().release(
        ReleaseRequest{"order/k", HolderParams{"a", std::nullopt, 0, false}, f.caller()},
        releases.to(2));
    f.engine().acquire(acquire_request(f, "order/k", "b"), acquires.to(3));
    std::vector<std::string> bound;
    for (int i = 0; i < 8; ++i) {
      AcquireRequest r = acquire_request(f, "order/bound" + std::to_string(i), "c");
      r.params.release_on_disconnect = true;
      r.caller.conn = conn;
      bound.push_back(r.key);
      f.engine().acquire(std::move(r), acquires.to(10 + i));
    }
    // Sent after the acquires before it: it finds their actors and ends their leases.
    f.engine().disconnect(conn, bound);
  }
  REQUIRE(eventually([&] { return acquires.size() == 11 && releases.size() == 1; }));
  std::map<int, AcquireResult> by_tag(acquires.got.begin(), acquires.got.end());
  CHECK(by_tag[0].status == AcquireStatus::acquired);
  CHECK(by_tag[1].status == AcquireStatus::held);
  CHECK(releases.got[0].second.status == HolderStatus::ok);
  REQUIRE(by_tag[3].status == AcquireStatus::acquired);
  CHECK(by_tag[3].lease->token > by_tag[0].lease->token);
  for (int i = 0; i < 8; ++i) {
    CHECK_FALSE(f.get("order/bound" + std::to_string(i)).lease);
  }
}

TEST_CASE("a connection's lost leases of one commit come in one call", "[shards]") {
  struct Listener : ConnectionListener {
    std::mutex mutex;
    std::size_t calls = 0;
    std::vector<Event> events;
    void on_lost(std::vector<Event> lost) override {
      std::lock_guard lock(mutex);
      ++calls;
      for (Event& e : lost) events.push_back(std::move(e));
    }
  };
  EngineConfig config;
  config.shards = 2;
  EngineFixture f(config);
  auto listener = std::make_shared<Listener>();
  ConnId conn = f.engine().connect(listener);
  constexpr int kLeases = 200;
  Replies<AcquireResult> acquires;
  {
    Engine::Burst burst(f.engine());
    for (int i = 0; i < kLeases; ++i) {
      AcquireRequest r = acquire_request(f, "lost/" + std::to_string(i), "o");
      r.caller.conn = conn;
      f.engine().acquire(std::move(r), acquires.to(i));
    }
  }
  REQUIRE(eventually([&] { return acquires.size() == kLeases; }));
  f.clock().advance(1000);
  f.expire_due();
  REQUIRE(eventually([&] {
    std::lock_guard lock(listener->mutex);
    return listener->events.size() == kLeases;
  }));
  std::lock_guard lock(listener->mutex);
  // One expiry turn, one commit and one call per shard.
  CHECK(listener->calls <= config.shards);
  std::set<std::string> keys;
  for (const Event& e : listener->events) {
    CHECK(e.type == EventType::expired);
    CHECK(e.revision > 0);
    keys.insert(e.key);
  }
  CHECK(keys.size() == kLeases);
}

TEST_CASE("each connection gets its own lost leases of a commit, in commit order", "[shards]") {
  struct Listener : ConnectionListener {
    std::mutex mutex;
    std::vector<std::vector<Event>> calls;
    void on_lost(std::vector<Event> lost) override {
      std::lock_guard lock(mutex);
      calls.push_back(std::move(lost));
    }
    std::size_t count() {
      std::lock_guard lock(mutex);
      std::size_t n = 0;
      for (const auto& c : calls) n += c.size();
      return n;
    }
  };
  EngineConfig config;
  config.shards = 1;  // one commit for all: the connections' notices are interleaved in it
  EngineFixture f(config);
  std::vector<std::shared_ptr<Listener>> listeners;
  std::vector<ConnId> conns;
  for (int i = 0; i < 3; ++i) {
    listeners.push_back(std::make_shared<Listener>());
    conns.push_back(f.engine().connect(listeners.back()));
  }
  constexpr int kLeases = 90;
  Replies<AcquireResult> acquires;
  {
    Engine::Burst burst(f.engine());
    for (int i = 0; i < kLeases; ++i) {
      AcquireRequest r = acquire_request(f, "mixed/" + std::to_string(i), "o");
      r.caller.conn = conns[static_cast<std::size_t>(i * 7 % 3)];
      f.engine().acquire(std::move(r), acquires.to(i));
    }
  }
  REQUIRE(eventually([&] { return acquires.size() == kLeases; }));
  f.clock().advance(1000);
  f.expire_due();
  REQUIRE(eventually([&] {
    std::size_t n = 0;
    for (auto& l : listeners) n += l->count();
    return n == kLeases;
  }));
  for (std::size_t c = 0; c < listeners.size(); ++c) {
    std::lock_guard lock(listeners[c]->mutex);
    Revision last = 0;
    std::size_t got = 0;
    for (const auto& call : listeners[c]->calls) {
      for (const Event& e : call) {
        CHECK(e.type == EventType::expired);
        CHECK(e.revision > last);  // commit order
        last = e.revision;
        int n = std::stoi(e.key.substr(e.key.find('/') + 1));
        CHECK(static_cast<std::size_t>(n * 7 % 3) == c);  // its own leases only
        ++got;
      }
    }
    CHECK(got == kLeases / 3);
  }
}
