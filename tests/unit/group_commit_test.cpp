// Concurrent writers share WAL syncs.
#include <algorithm>
#include <catch2/catch.hpp>

#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

TEST_CASE("group commit batches concurrent writers into fewer syncs", "[group_commit]") {
  EngineFixture f;
  auto before = f.engine().stats().writer;
  constexpr int kRequests = 2000;
  auto results = f.acquire_burst("gc/", kRequests);
  CHECK(std::all_of(results.begin(), results.end(),
                    [](const AcquireResult& r) { return r.status == AcquireStatus::acquired; }));
  auto after = f.engine().stats().writer;
  std::uint64_t ops = after.ops - before.ops;
  std::uint64_t syncs = after.syncs - before.syncs;
  CHECK(ops == kRequests);
  CHECK(syncs < ops / 2);  // every sync carried several writers' changes
  CHECK(after.max_batch > 1);
  CHECK(f.engine().revision() == kRequests);
  UNSCOPED_INFO("syncs: " << syncs << " for " << ops << " writes, max batch " << after.max_batch);
}

TEST_CASE("with sync=none nothing is fsync'd but everything is written", "[group_commit]") {
  EngineConfig config;
  config.sync = false;
  EngineFixture f(config);
  f.acquire("k", "o");
  CHECK(f.engine().stats().writer.syncs == 0);
  f.reopen();
  CHECK(f.get("k").lease);
}
