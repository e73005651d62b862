// Nodes' membership and slot claims on a real etcd, with the engine replaced by a record of
// what it was told to adopt and drop.
#include "storage/membership.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "tests/support/etcd_process.hpp"

using namespace tenure;
using namespace std::chrono_literals;

namespace {

constexpr auto kTtl = 2s;  // etcd's shortest lease with its default election timeout

storage::EtcdOptions options_for(const test::EtcdCluster& etcd) {
  storage::EtcdOptions options;
  options.endpoints = etcd.endpoint_list();
  options.timeout = 1000ms;
  return options;
}

// One node: its own etcd client and claims table, and an engine that only takes notes.
struct Node {
  Node(const test::EtcdCluster& etcd, const std::string& id)
      : client(options_for(etcd)),
        membership(client, claims, options(id),
                   {[this](std::uint32_t slot, std::string&) {
                      std::lock_guard lock(mutex);
                      adopted.insert(slot);
                      ++adoptions;
                      return true;
                    },
                    [this](std::uint32_t slot) {
                      std::lock_guard lock(mutex);
                      adopted.erase(slot);
                      ++drops;
                    }}) {}

  static storage::MembershipOptions options(const std::string& id) {
    storage::MembershipOptions o;
    o.prefix = "/t";
    o.node_id = id;
    o.peer = "127.0.0.1:" + std::to_string(7000 + id.size());
    o.lease_ttl = kTtl;
    return o;
  }
  storage::Status start() {
    storage::Status status = membership.open();
    return status.ok() ? membership.start() : status;
  }
  std::set<std::uint32_t> slots() {
    std::lock_guard lock(mutex);
    return adopted;
  }
  // Waits until the node has adopted exactly `n` slots.
  bool owns(std::size_t n, std::chrono::milliseconds patience = 10s) {
    auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (slots().size() == n && membership.slots_owned() == n) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  storage::EtcdClient client;
  storage::SlotClaims claims;
  std::mutex mutex;
  std::set<std::uint32_t> adopted;
  std::atomic<int> adoptions{0};
  std::atomic<int> drops{0};
  storage::Membership membership;
};

}  // namespace

TEST_CASE("one node writes: it owns every slot, and another takes them at once when it stops",
          "[membership]") {
  test::EtcdCluster etcd(1);
  Node a(etcd, "a");
  REQUIRE(a.start().ok());
  REQUIRE(a.owns(kSlots));
  CHECK(a.membership.secret().size() == 64);
  storage::KeyValue writer;
  REQUIRE(a.client.get("/t/writer", writer).ok());
  CHECK(writer.value == "a");
  Node b(etcd, "bb");
  REQUIRE(b.start().ok());
  CHECK(b.membership.secret() == a.membership.secret());
  // b reads a's claims at its next poll, routes every slot to it and claims none.
  auto routed = [](Node& n, const std::string& owner) {
    for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
      if (n.membership.owner(slot) != owner) return false;
    }
    return true;
  };
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!routed(b, "a") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(500ms);  // a few polls more: nothing moves
  CHECK(routed(a, "a"));
  CHECK(routed(b, "a"));
  CHECK(a.slots().size() == kSlots);
  CHECK(b.slots().empty());
  CHECK(b.adoptions == 0);
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) CHECK(a.claims.owns(slot));
  auto nodes = a.membership.nodes();
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[1].id == "bb");
  CHECK(nodes[1].peer == "127.0.0.1:7002");

  CHECK(a.membership.claim_wait() == kTtl + 1s);

  std::uint32_t moving = *a.slots().begin();
  a.membership.stop();  // revokes its lease: its claims go now, not at the TTL
  CHECK(a.slots().empty());
  CHECK(a.membership.owner(moving).empty());
  CHECK(b.owns(kSlots, 3s));
  CHECK(b.membership.owner(moving) == "bb");
}

TEST_CASE("a node that is not the writer hands its slots to the writer", "[membership]") {
  test::EtcdCluster etcd(1);
  Node a(etcd, "a");
  REQUIRE(a.start().ok());
  REQUIRE(a.owns(kSlots));
  Node b(etcd, "bb");
  REQUIRE(b.start().ok());
  std::this_thread::sleep_for(500ms);
  REQUIRE(b.slots().empty());
  // The writer claim moves to b under b's lease, as a claim of b's whose answer was lost would.
  storage::KeyValue entry;
  REQUIRE(b.client.get("/t/nodes/bb", entry).ok());
  REQUIRE(b.client.put("/t/writer", "bb", entry.lease).ok());
  CHECK(a.owns(0, 5s));
  CHECK(b.owns(kSlots, 5s));
  CHECK(a.drops == static_cast<int>(kSlots));
}

TEST_CASE("a dead node's slots are taken over once its lease has run out, not before",
          "[membership]") {
  test::EtcdCluster etcd(1);
  // A node that claimed half the slots and died: nothing keeps its lease alive.
  storage::EtcdClient dead(options_for(etcd));
  std::int64_t lease = 0;
  auto granted = std::chrono::steady_clock::now();  // its TTL runs from no earlier than this
  REQUIRE(dead.lease_grant(2, lease).ok());
  REQUIRE(dead.put("/t/nodes/dead", R"({"peer":"127.0.0.1:9"})", lease).ok());
  for (std::uint32_t slot = 0; slot < kSlots / 2; ++slot) {
    char key[16];
    std::snprintf(key, sizeof key, "/t/slots/%03u", slot);
    REQUIRE(dead.put(key, "dead", lease).ok());
  }
  Node a(etcd, "a");
  REQUIRE(a.start().ok());
  REQUIRE(a.owns(kSlots));  // the liveness: within its patience, however loaded the machine
  auto took = std::chrono::steady_clock::now() - granted;
  // How soon after is etcd's lessor and the machine's load; reported, not asserted.
  WARN("takeover " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                   << " ms after the dead node's lease was granted (TTL 2000 ms)");
  CHECK(took >= kTtl);  // the safety: no slot of a live lease is taken
}

TEST_CASE("a node whose lease expired drops every slot, then registers and claims again",
          "[membership]") {
  test::EtcdCluster etcd(1);
  Node a(etcd, "a");
  REQUIRE(a.start().ok());
  REQUIRE(a.owns(kSlots));
  auto before = a.claims.claim_revision(0);
  // As if it was paused past its TTL: etcd ended its lease, and its claims with it.
  storage::KeyValue kv;
  REQUIRE(a.client.get("/t/nodes/a", kv).ok());
  REQUIRE(a.client.lease_revoke(kv.lease).ok());
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (a.drops < static_cast<int>(kSlots) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  CHECK(a.drops == static_cast<int>(kSlots));
  REQUIRE(a.owns(kSlots));
  CHECK(a.claims.claim_revision(0) > before);  // a new claim: the old one fences old writes
  REQUIRE(a.client.get("/t/nodes/a", kv).ok());
  CHECK(kv.create_revision > 0);
}

TEST_CASE("a claim the ledger found gone is dropped and claimed anew", "[membership]") {
  test::EtcdCluster etcd(1);
  Node a(etcd, "a");
  REQUIRE(a.start().ok());
  REQUIRE(a.owns(kSlots));
  auto revision = a.claims.claim_revision(5);
  REQUIRE(revision);
  // Someone deleted the claim and the ledger's next write on the slot found out.
  REQUIRE(a.client.delete_range("/t/slots/005").ok());
  a.claims.lost(5, *revision);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (a.drops == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(a.drops == 1);
  REQUIRE(a.owns(kSlots));
  CHECK(a.claims.claim_revision(5) > revision);
  CHECK(a.adoptions == static_cast<int>(kSlots) + 1);
}

TEST_CASE("a node refuses a cluster of another slot count", "[membership]") {
  test::EtcdCluster etcd(1);
  storage::EtcdClient client(options_for(etcd));
  REQUIRE(client.put("/t/config", R"({"slots":128})").ok());
  Node a(etcd, "a");
  storage::Status status = a.start();
  CHECK(status.code() == storage::errc::rejected);
  CHECK(status.message().find("128 slots") != std::string::npos);
}

TEST_CASE("a second node of a running node's id is refused and takes nothing of it",
          "[membership]") {
  test::EtcdCluster etcd(1);
  Node a(etcd, "a");
  REQUIRE(a.start().ok());
  REQUIRE(a.owns(kSlots));
  storage::KeyValue entry;
  REQUIRE(a.client.get("/t/nodes/a", entry).ok());
  {
    Node twin(etcd, "a");
    storage::Status status = twin.start();  // waits out a lease TTL first, as after a crash
    CHECK(status.code() == storage::errc::in_use);
    CHECK(status.message().find("taken") != std::string::npos);
  }
  // The running node's entry is as it was: neither overwritten nor revoked with the twin's lease.
  storage::KeyValue still;
  REQUIRE(a.client.get("/t/nodes/a", still).ok());
  CHECK(still.create_revision == entry.create_revision);
  CHECK(still.lease == entry.lease);
  CHECK(a.owns(kSlots, 1s));
}

TEST_CASE("node ids are what etcd keys can carry", "[membership]") {
  CHECK(storage::valid_node_id("n1"));
  CHECK(storage::valid_node_id("host-2.example_3"));
  CHECK_FALSE(storage::valid_node_id(""));
  CHECK_FALSE(storage::valid_node_id("a/b"));
  CHECK_FALSE(storage::valid_node_id(std::string(65, 'a')));
}
