// How fast EtcdLedger commits on a 3-member etcd on loopback: hidden, run by hand with
//   build/tests/cluster/cluster_storage_tests "[etcd_ledger_bench]"
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdio>

#include "storage/codec.hpp"
#include "storage/etcd_ledger.hpp"
#include "tests/support/etcd_process.hpp"

using namespace tenure;

namespace {

storage::WriteOp acquire_op(std::string key) {
  KeyState state;
  state.lease = Lease{};
  state.lease->owner = "bench";
  state.lease->token = 1;
  state.lease->expires_at = 1'700'000'060'000;
  state.last_token = 1;
  storage::WriteOp op;
  op.row = storage::encode_state(state);
  op.events.push_back(Event{
      EventType::acquired, key, "bench", 1, 1'700'000'000'000, state.lease->expires_at, 0, {}});
  op.key = std::move(key);
  return op;
}

}  // namespace

TEST_CASE("EtcdLedger throughput on a 3-member etcd", "[.bench][etcd_ledger_bench]") {
  test::EtcdCluster etcd(3);
  storage::EtcdLedgerOptions options;
  options.etcd.endpoints = etcd.endpoint_list();
  options.prefix = "/bench";
  storage::SlotClaims claims;
  storage::EtcdClient client(options.etcd);
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
    char key[32];
    std::snprintf(key, sizeof key, "/bench/slots/%03u", slot);
    storage::EtcdTxn txn;
    txn.compare_create_revision(key, 0);
    txn.put(key, "bench");
    storage::EtcdTxnResult result;
    REQUIRE(client.txn(txn, result).ok());
    claims.claim(slot, result.revision);
  }
  storage::Status status;
  auto ledger = storage::EtcdLedger::open(options, claims, status);
  REQUIRE(ledger);

  for (std::size_t group : {std::size_t{1}, std::size_t{64}}) {
    // Up to 64 groups in flight, as 64 busy shards' turns would be.
    constexpr int kInFlight = 64;
    std::mutex mutex;
    std::condition_variable cv;
    int in_flight = 0;
    std::uint64_t done_ops = 0, refused = 0, next_key = 0;
    auto before = ledger->stats();
    auto start = std::chrono::steady_clock::now();
    auto end = start + std::chrono::seconds(3);
    while (std::chrono::steady_clock::now() < end) {
      {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return in_flight < kInFlight; });
        ++in_flight;
      }
      std::vector<storage::WriteOp> ops;
      for (std::size_t i = 0; i < group; ++i) {
        ops.push_back(acquire_op("g" + std::to_string(group) + "/" + std::to_string(next_key++)));
      }
      ledger->submit(std::move(ops), [&](bool ok, std::vector<storage::WriteOp>& written) {
        if (!ok) {
          for (std::size_t i = 0; i < written.size(); ++i) ledger->refusal_settled();
        }
        std::lock_guard lock(mutex);
        (ok ? done_ops : refused) += written.size();
        --in_flight;
        cv.notify_one();
      });
    }
    ledger->flush();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto after = ledger->stats();
    std::uint64_t txns = after.batches - before.batches;
    std::printf(
        "groups of %zu op(s): %.0f ops/s, %.0f txns/s, %.1f ops per txn, %.2f ms per txn, "
        "%llu refused\n",
        group, static_cast<double>(done_ops) / seconds, static_cast<double>(txns) / seconds,
        txns ? static_cast<double>(after.ops - before.ops) / static_cast<double>(txns) : 0.0,
        txns ? static_cast<double>(after.write_us_sum - before.write_us_sum) / 1000.0 /
                   static_cast<double>(txns)
             : 0.0,
        static_cast<unsigned long long>(refused));
    CHECK(refused == 0);
  }
}
