// The shard model: what a shard's turn writes, and work that spans shards.
#include <catch2/catch.hpp>
#include <thread>

#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

namespace {

// Polls `done` for up to 10 s: the engine's work ends on its own threads.
template <typename Pred>
bool eventually(Pred done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace

TEST_CASE("leases due together expire in one write per shard", "[shards]") {
  EngineConfig config;
  config.shards = 2;
  EngineFixture f(config);
  constexpr int kLeases = 1000;
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
