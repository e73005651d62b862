// Cluster mode on the engine: a node serves only the slots it adopted, adopting a slot recovers
// its rows as a restart does, and dropping one lets its keys go without writing.
#include <catch2/catch.hpp>
#include <future>

#include "core/slot.hpp"
#include "storage/ledger.hpp"
#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

namespace {

constexpr std::uint32_t kSlot = 7;
constexpr std::uint32_t kOther = 8;

// The n-th key of `slot` named `prefix` and a number.
std::string key_in(std::uint32_t slot, const std::string& prefix, int n = 0) {
  for (int i = 0;; ++i) {
    std::string key = prefix + std::to_string(i);
    if (slot_of(key) == slot && n-- == 0) return key;
  }
}

// The slot's rows, read from the ledger directly (the engine closed), as a cluster's ledger
// hands them over.
Engine::SlotRows rows_of(const std::string& data_dir, std::uint32_t slot) {
  storage::LedgerOptions options;
  options.path = data_dir;
  storage::Status status;
  auto ledger = storage::Ledger::open(options, status);
  REQUIRE(ledger);
  Engine::SlotRows rows;
  REQUIRE(ledger
              ->scan_leases([&](std::string key, storage::LoadedState loaded) {
                if (slot_of(key) == slot) rows.emplace_back(std::move(key), std::move(loaded));
              })
              .ok());
  ledger->stop();
  return rows;
}

EngineConfig cluster_config() {
  EngineConfig config;
  config.cluster = true;
  return config;
}

void adopt(EngineFixture& f, std::uint32_t slot, Engine::SlotRows rows = {}) {
  std::string error;
  REQUIRE(f.engine().adopt_slot(slot, std::move(rows), error));
}

AcquireRequest acquire_request(EngineFixture& f, const std::string& key, const std::string& owner) {
  AcquireRequest r;
  r.key = key;
  r.params.owner = owner;
  r.params.ttl_ms = 10'000;
  r.caller = f.caller();
  return r;
}

bool moved(const std::optional<Error>& error) {
  return error && error->code == errc::unavailable &&
         error->message.find("moved to another node") != std::string::npos;
}

}  // namespace

TEST_CASE("a cluster node serves only the keys of the slots it adopted", "[slots]") {
  EngineFixture f(cluster_config());
  std::string key = key_in(kSlot, "k");
  CHECK(moved(f.acquire(key, "a").error));
  CHECK(moved(f.get(key).error));
  adopt(f, kSlot);
  CHECK(f.acquire(key, "a").status == AcquireStatus::acquired);
  CHECK(moved(f.acquire(key_in(kOther, "k"), "a").error));
}

TEST_CASE("adopting a slot recovers its rows as a restart does, durably", "[slots]") {
  EngineFixture f;  // a single node writes the rows, as the slot's former owner did
  std::string live = key_in(kSlot, "live");
  std::string overdue = key_in(kSlot, "overdue");
  std::string bound = key_in(kSlot, "bound");
  std::string elsewhere = key_in(kOther, "elsewhere");
  Token live_token = f.acquire(live, "a", 10'000).lease->token;
  f.acquire(overdue, "b", 1'000);
  AcquireRequest r = acquire_request(f, bound, "c");
  r.params.release_on_disconnect = true;
  r.caller.conn = 5;
  REQUIRE(test::call(f.engine(), &Engine::acquire, r).status == AcquireStatus::acquired);
  f.acquire(elsewhere, "d", 1'000);
  f.close();
  f.clock().advance(2'000);  // the owner died; overdue's deadline passed meanwhile

  Engine::SlotRows rows = rows_of(f.data_dir(), kSlot);
  REQUIRE(rows.size() == 3);
  f.config().cluster = true;
  f.config().manual_timers = true;
  f.open();
  Revision before = f.engine().revision();
  adopt(f, kSlot, std::move(rows));
  // One recovery write: the connection-bound lease released. The overdue one is ended by the
  // shard's timer, as at a restart; every operation finds it ended already.
  CHECK(f.engine().revision() == before + 1);
  CHECK_FALSE(f.get(overdue).lease);
  f.expire_due();
  REQUIRE(test::eventually([&] { return f.engine().revision() == before + 2; }));
  auto held = f.get(live);
  REQUIRE(held.lease);
  CHECK(held.lease->token == live_token);
  CHECK(held.lease->owner == "a");
  CHECK_FALSE(f.get(overdue).lease);
  CHECK(f.history(overdue).tenures.at(0).end == EndReason::expired);
  CHECK_FALSE(f.get(bound).lease);
  CHECK(f.history(bound).tenures.at(0).end == EndReason::released);
  CHECK(moved(f.get(elsewhere).error));  // another slot: not recovered here

  // The live lease's timer is armed from its persisted deadline.
  f.clock().advance(8'000);
  f.expire_due();
  CHECK_FALSE(f.get(live).lease);
  CHECK(f.history(live).tenures.at(0).end == EndReason::expired);

  // The recovery's and the timer's writes are durable.
  f.close();
  for (auto& [key, loaded] : rows_of(f.data_dir(), kSlot)) {
    if (key == overdue || key == bound) CHECK_FALSE(loaded.state.lease);
  }
}

TEST_CASE("dropping a slot lets its keys go without writing", "[slots]") {
  EngineFixture f(cluster_config());
  adopt(f, kSlot);
  adopt(f, kOther);
  std::string key = key_in(kSlot, "k");
  std::string kept = key_in(kOther, "kept");
  Token token = f.acquire(key, "a", 1'000).lease->token;
  f.acquire(kept, "a", 1'000);
  // A waiter queued on the key.
  AcquireRequest w = acquire_request(f, key, "b");
  w.wait_ms = 60'000;
  std::promise<AcquireResult> waited;
  f.engine().acquire(std::move(w), [&](AcquireResult r) { waited.set_value(std::move(r)); });
  REQUIRE(f.get(key).waiters == 1);

  Revision before = f.engine().revision();
  f.engine().drop_slot(kSlot);
  AcquireResult turned_away = waited.get_future().get();
  CHECK(moved(turned_away.error));
  CHECK(f.engine().stats().waiters == 0);
  CHECK(f.engine().stats().live_leases == 1);  // only `kept`
  CHECK(moved(f.get(key).error));
  // Its timer went with it: nothing is written at its deadline, nor by a keepalive.
  f.clock().advance(2'000);
  f.expire_due();
  CHECK(f.keepalive("a").count == 0);  // kept's lease expired too, in the slot still served
  CHECK_FALSE(f.get(kept).lease);
  CHECK(f.engine().revision() == before + 1);  // kept's expiry only

  // Whoever adopts the slot next finds the lease as the last owner wrote it.
  f.close();
  auto rows = rows_of(f.data_dir(), kSlot);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].second.state.lease);
  CHECK(rows[0].second.state.lease->token == token);
  f.open();
  adopt(f, kSlot, std::move(rows));
  CHECK_FALSE(f.get(key).lease);  // recovered as overdue, and expired now
  CHECK(f.history(key).tenures.at(0).end == EndReason::expired);
  CHECK(f.acquire(key, "b").lease->token > token);
}

TEST_CASE("dropping a slot tells the connections of its leases that it tells them no more",
          "[slots]") {
  struct Unowned : ConnectionListener {
    std::promise<std::vector<BoundTenure>> told;
    void on_lost(std::vector<Event>) override {}
    void on_unowned(std::vector<BoundTenure> tenures) override {
      told.set_value(std::move(tenures));
    }
  };
  EngineFixture f(cluster_config());
  adopt(f, kSlot);
  adopt(f, kOther);
  auto listener = std::make_shared<Unowned>();
  auto told = listener->told.get_future();
  ConnId conn = f.engine().connect(listener);
  std::string key = key_in(kSlot, "k");
  Token token = f.acquire_on(key, "a", 10'000, conn).lease->token;
  f.acquire_on(key_in(kOther, "kept"), "a", 10'000, conn);
  f.acquire(key_in(kSlot, "unbound"), "a", 10'000);  // no connection to tell

  f.engine().drop_slot(kSlot);
  REQUIRE(told.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  auto tenures = told.get();
  REQUIRE(tenures.size() == 1);
  CHECK(tenures[0].key == key);
  CHECK(tenures[0].token == token);
}

TEST_CASE("adopting a slot again replaces what the node kept of it", "[slots]") {
  EngineFixture f(cluster_config());
  adopt(f, kSlot);
  std::string key = key_in(kSlot, "k");
  Token token = f.acquire(key, "a", 1'000).lease->token;
  REQUIRE(f.engine().stats().live_leases == 1);
  // Another node held the slot meanwhile and ended the lease: its row is what counts, not the
  // actor this node still has.
  storage::LoadedState ended;
  ended.state.last_token = token;
  ended.state.last_owner = "a";
  Engine::SlotRows rows;
  rows.emplace_back(key, ended);
  adopt(f, kSlot, std::move(rows));
  CHECK_FALSE(f.get(key).lease);
  CHECK(f.engine().stats().live_leases == 0);
  CHECK(f.acquire(key, "b").lease->token == token + 1);
}
