#include "storage/etcd_client.hpp"

#include <catch2/catch.hpp>
#include <thread>

#include "tests/support/etcd_process.hpp"

using namespace tenure;
using storage::errc;

namespace {

storage::EtcdOptions options_for(const test::EtcdCluster& etcd) {
  storage::EtcdOptions options;
  options.endpoints = etcd.endpoint_list();
  options.timeout = std::chrono::milliseconds(1000);
  return options;
}

}  // namespace

TEST_CASE("endpoint lists are http://HOST:PORT separated by commas", "[etcd_client]") {
  std::vector<std::string> endpoints;
  REQUIRE(storage::parse_endpoints("http://127.0.0.1:2379,http://h:22379/", endpoints).ok());
  CHECK(endpoints == std::vector<std::string>{"http://127.0.0.1:2379", "http://h:22379"});
  CHECK(storage::parse_endpoints("", endpoints).code() == errc::rejected);
  CHECK(storage::parse_endpoints("127.0.0.1:2379", endpoints).code() == errc::rejected);
  CHECK(storage::parse_endpoints("http://h:0", endpoints).code() == errc::rejected);
  CHECK(storage::parse_endpoints("http://h:2379,", endpoints).ok());
  CHECK(storage::prefix_end("/t/a") == "/t/b");
  CHECK(storage::prefix_end(std::string("a\xff", 2)) == "b");
}

TEST_CASE("the client reads, writes, transacts and leases on a real etcd", "[etcd_client]") {
  test::EtcdCluster etcd(1);
  storage::EtcdClient client(options_for(etcd));
  std::string binary("k\0\xff", 3);
  REQUIRE(client.put(binary, "v1").ok());
  storage::KeyValue kv;
  REQUIRE(client.get(binary, kv).ok());
  CHECK(kv.value == "v1");
  CHECK(kv.create_revision > 0);
  REQUIRE(client.get("absent", kv).ok());
  CHECK(kv.create_revision == 0);

  for (int i = 0; i < 5; ++i) REQUIRE(client.put("p/" + std::to_string(i), "x").ok());
  storage::RangeRequest request{"p/", storage::prefix_end("p/"), 3, false};
  storage::RangeResult range;
  REQUIRE(client.range(request, range).ok());
  REQUIRE(range.kvs.size() == 3);
  CHECK(range.more);
  CHECK(range.kvs[0].key == "p/0");
  request.descend = true;
  REQUIRE(client.range(request, range).ok());
  CHECK(range.kvs[0].key == "p/4");

  // A transaction runs its success ops only when every compare holds.
  storage::EtcdTxn txn;
  txn.compare_create_revision("claim", 0);
  txn.put("claim", "me");
  txn.on_failure_range("claim");
  storage::EtcdTxnResult result;
  REQUIRE(client.txn(txn, result).ok());
  CHECK(result.succeeded);
  REQUIRE(client.txn(txn, result).ok());
  CHECK_FALSE(result.succeeded);
  REQUIRE(result.ranges.size() == 1);
  REQUIRE(result.ranges[0].kvs.size() == 1);
  CHECK(result.ranges[0].kvs[0].value == "me");
  std::int64_t created = result.ranges[0].kvs[0].create_revision;
  txn.clear();
  txn.compare_create_revision("claim", created);
  txn.delete_range("p/", storage::prefix_end("p/"));
  REQUIRE(client.txn(txn, result).ok());
  CHECK(result.succeeded);
  request.descend = false;
  REQUIRE(client.range(request, range).ok());
  CHECK(range.kvs.empty());

  // A key put with a lease goes with it.
  std::int64_t lease = 0, ttl = 0;
  REQUIRE(client.lease_grant(5, lease).ok());
  REQUIRE(client.put("leased", "x", lease).ok());
  REQUIRE(client.lease_keepalive(lease, ttl).ok());
  CHECK(ttl == 5);
  REQUIRE(client.lease_revoke(lease).ok());
  REQUIRE(client.get("leased", kv).ok());
  CHECK(kv.create_revision == 0);
  REQUIRE(client.lease_keepalive(lease, ttl).ok());
  CHECK(ttl == 0);

  // etcd's own refusals are errors, not retries.
  storage::EtcdTxn bad;
  bad.put("a", "1");
  bad.put("a", "2");  // a key twice in one txn
  CHECK(client.txn(bad, result).code() == errc::rejected);
}

TEST_CASE("a watch delivers every change in order and ends when told", "[etcd_client]") {
  test::EtcdCluster etcd(1);
  storage::EtcdClient client(options_for(etcd));
  REQUIRE(client.put("w/0", "before").ok());
  storage::KeyValue kv;
  REQUIRE(client.get("w/0", kv).ok());
  std::vector<std::string> seen;
  std::atomic<bool> go{true};
  std::thread writer([&] {
    for (int i = 1; i <= 20; ++i) CHECK(client.put("w/" + std::to_string(i), "v").ok());
    CHECK(client.delete_range("w/1").ok());
  });
  storage::Status status = client.watch(
      "w/", storage::prefix_end("w/"), kv.mod_revision,
      [&](std::vector<storage::WatchEvent>& events) {
        for (auto& e : events) seen.push_back((e.deleted ? "-" : "+") + e.kv.key);
        if (seen.size() == 22) go = false;
      },
      [&] { return go.load(); });
  writer.join();
  CHECK(status.ok());
  REQUIRE(seen.size() == 22);
  CHECK(seen[0] == "+w/0");
  CHECK(seen[20] == "+w/20");
  CHECK(seen[21] == "-w/1");

  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    client.stop_watch();
  });
  status = client.watch(
      "w/", storage::prefix_end("w/"), 0, [](std::vector<storage::WatchEvent>&) {},
      [] { return true; });
  stopper.join();
  CHECK(status.ok());
}

TEST_CASE("calls fail over when an etcd member dies or stalls", "[etcd_client]") {
  test::EtcdCluster etcd(3);
  storage::EtcdClient client(options_for(etcd));
  REQUIRE(client.put("k", "1").ok());
  std::string first = client.current_endpoint();
  CHECK(first == etcd.endpoint(0));
  etcd.kill(0);
  etcd.wait_healthy();
  storage::KeyValue kv;
  REQUIRE(client.get("k", kv).ok());
  CHECK(kv.value == "1");
  CHECK(client.current_endpoint() != first);
  REQUIRE(client.put("k", "2").ok());
  storage::EtcdTxn txn;
  txn.compare_create_revision("k", kv.create_revision);
  txn.put("k", "3");
  storage::EtcdTxnResult result;
  REQUIRE(client.txn(txn, result).ok());
  CHECK(result.succeeded);

  // A paused member accepts connections but never answers: the timeout moves the call on.
  etcd.restart(0);
  etcd.wait_healthy();
  int current = client.current_endpoint() == etcd.endpoint(1) ? 1 : 2;
  etcd.stop(current);
  auto started = std::chrono::steady_clock::now();
  storage::Status status = client.get("k", kv);
  // One timeout per member at most, never a hang on the paused one.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(4));
  if (!status.ok()) {
    // The paused member was the leader, and the others had no leader until they elected one.
    // The failed call left the paused member preferred, so the next call must move on again.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (int i = 0; i < etcd.size(); ++i) {
      while (i != current && !etcd.healthy(i) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    status = client.get("k", kv);
  }
  CHECK(client.current_endpoint() != etcd.endpoint(current));
  etcd.cont(current);
  CHECK(status.ok());
  CHECK(kv.value == "3");
}
