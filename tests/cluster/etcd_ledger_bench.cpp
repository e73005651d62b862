// How fast EtcdLedger commits on a 3-member etcd on loopback: hidden, run by hand with
//   build/tests/cluster/cluster_storage_tests "[etcd_ledger_bench]"
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdio>
#include <thread>

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

struct Node {
  storage::SlotClaims claims;
  std::unique_ptr<storage::EtcdLedger> ledger;
  std::uint64_t ops = 0, refused = 0;
};

// Keeps up to 64 groups of `group` ops in flight on the node (as 64 busy shards' turns would)
// until `end`; keys are new ones in the node's slots.
void drive(Node& node, std::size_t group, std::chrono::steady_clock::time_point end,
           const std::string& tag) {
  std::mutex mutex;
  std::condition_variable cv;
  int in_flight = 0;
  std::uint64_t n = 0;
  auto next_key = [&] {
    for (;;) {
      std::string key = tag + "/" + std::to_string(n++);
      if (node.claims.owns(slot_of(key))) return key;
    }
  };
  while (std::chrono::steady_clock::now() < end) {
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return in_flight < 64; });
      ++in_flight;
    }
    std::vector<storage::WriteOp> ops;
    for (std::size_t i = 0; i < group; ++i) ops.push_back(acquire_op(next_key()));
    node.ledger->submit(std::move(ops), [&](bool ok, std::vector<storage::WriteOp>& written) {
      if (!ok) {
        for (std::size_t i = 0; i < written.size(); ++i) node.ledger->refusal_settled();
      }
      std::lock_guard lock(mutex);
      (ok ? node.ops : node.refused) += written.size();
      --in_flight;
      cv.notify_one();
    });
  }
  node.ledger->flush();
}

void run(std::vector<std::unique_ptr<Node>>& nodes, std::size_t group) {
  std::vector<storage::WriterStats> before;
  for (auto& node : nodes) {
    before.push_back(node->ledger->stats());
    node->ops = node->refused = 0;
  }
  auto start = std::chrono::steady_clock::now();
  auto end = start + std::chrono::seconds(3);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    threads.emplace_back(drive, std::ref(*nodes[i]), group, end,
                         "g" + std::to_string(group) + "n" + std::to_string(i));
  }
  for (auto& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::uint64_t ops = 0, refused = 0, txns = 0, conflicts = 0, us = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    auto after = nodes[i]->ledger->stats();
    ops += nodes[i]->ops;
    refused += nodes[i]->refused;
    txns += after.batches - before[i].batches;
    conflicts += after.conflicts - before[i].conflicts;
    us += after.write_us_sum - before[i].write_us_sum;
  }
  std::printf(
      "%zu node(s), groups of %zu op(s): %.0f ops/s, %.0f txns/s, %.1f ops per txn, %.2f ms per "
      "txn, %llu conflicts, %llu refused\n",
      nodes.size(), group, static_cast<double>(ops) / seconds, static_cast<double>(txns) / seconds,
      txns ? static_cast<double>(ops) / static_cast<double>(txns) : 0.0,
      txns ? static_cast<double>(us) / 1000.0 / static_cast<double>(txns) : 0.0,
      static_cast<unsigned long long>(conflicts), static_cast<unsigned long long>(refused));
  for (auto& node : nodes) {
    if (node->refused) std::printf("  refused: %s\n", node->ledger->last_error().c_str());
  }
  CHECK(refused == 0);
}

}  // namespace

TEST_CASE("EtcdLedger throughput on a 3-member etcd", "[.bench][etcd_ledger_bench]") {
  test::EtcdCluster etcd(3);
  storage::EtcdLedgerOptions options;
  options.etcd.endpoints = etcd.endpoint_list();
  options.prefix = "/bench";
  storage::EtcdClient client(options.etcd);
  // Three nodes, each owning a third of the slots (one etcd member first in each one's list).
  std::vector<std::unique_ptr<Node>> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(std::make_unique<Node>());
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
    char key[32];
    std::snprintf(key, sizeof key, "/bench/slots/%03u", slot);
    storage::EtcdTxn txn;
    txn.compare_create_revision(key, 0);
    txn.put(key, "bench");
    storage::EtcdTxnResult result;
    REQUIRE(client.txn(txn, result).ok());
    nodes[slot % 3]->claims.claim(slot, result.revision);
  }
  for (int i = 0; i < 3; ++i) {
    auto node_options = options;
    std::rotate(node_options.etcd.endpoints.begin(), node_options.etcd.endpoints.begin() + i,
                node_options.etcd.endpoints.end());
    storage::Status status;
    nodes[i]->ledger = storage::EtcdLedger::open(node_options, nodes[i]->claims, status);
    REQUIRE(nodes[i]->ledger);
  }
  // One node owning every slot, then three writing at once (P/rev is their one contention).
  std::vector<std::unique_ptr<Node>> one;
  one.push_back(std::make_unique<Node>());
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
    for (auto& node : nodes) {
      if (auto claim = node->claims.claim_revision(slot)) one[0]->claims.claim(slot, *claim);
    }
  }
  storage::Status status;
  one[0]->ledger = storage::EtcdLedger::open(options, one[0]->claims, status);
  REQUIRE(one[0]->ledger);
  for (std::size_t group : {std::size_t{1}, std::size_t{64}}) run(one, group);
  one[0]->ledger->stop();
  for (std::size_t group : {std::size_t{1}, std::size_t{64}}) run(nodes, group);
}
