// Two real tenured nodes on one real etcd: the writer owns every slot, and when it is killed the
// other takes them all over once its lease runs out, with the leases granted through
// the dead node held until their own deadlines and its connection-bound ones released.
#include <array>
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

#include "core/slot.hpp"
#include "storage/etcd_client.hpp"
#include "tests/e2e/e2e.hpp"
#include "tests/support/etcd_process.hpp"
#include "tests/support/free_port.hpp"

using namespace e2e;
using namespace tenure;

namespace {

std::vector<std::string> node_args(const test::EtcdCluster& etcd, const std::string& id,
                                   const test::ReservedPort& peer_port) {
  return {"--cluster",           "etcd",
          "--etcd-endpoints",    etcd.endpoints(),
          "--node-id",           id,
          "--peer-listen",       "127.0.0.1:" + std::to_string(peer_port.port()),
          "--cluster-lease-ttl", "2s"};
}

std::uint64_t slots_owned(const Daemon& node) {
  return node.connect().call("\"op\":\"stats\"")["cluster"]["slots_owned"].u64();
}

// The node that claimed the slot in etcd.
std::string claimed_by(storage::EtcdClient& etcd, std::uint32_t slot) {
  char key[32];
  std::snprintf(key, sizeof key, "/tenure/slots/%03u", slot);
  storage::KeyValue kv;
  REQUIRE(etcd.get(key, kv).ok());
  return kv.value;
}

// A key whose slot `node` owns.
std::string key_of(storage::EtcdClient& etcd, const std::string& node, const std::string& prefix) {
  for (int i = 0;; ++i) {
    std::string key = prefix + std::to_string(i);
    if (claimed_by(etcd, slot_of(key)) == node) return key;
  }
}

// n1 writes (every slot), n2 forwards to it.
bool one_writer(const Daemon& n1, const Daemon& n2) {
  return slots_owned(n1) == kSlots && slots_owned(n2) == 0 &&
         n2.connect().call("\"op\":\"stats\"")["cluster"]["nodes"].size() == 2;
}

// One etcd member, a client of it, and two nodes: n1 first (the writer: it takes every slot),
// then n2, which takes none.
struct TwoNodes {
  TwoNodes() {
    REQUIRE(wait_until([&] { return slots_owned(n1) == kSlots; }, 10s));
    n2.start();
    REQUIRE(wait_until([&] { return one_writer(n1, n2); }, 15s));
    // And it stays so: n2 is no writer, so it claims nothing.
    std::this_thread::sleep_for(600ms);
    REQUIRE(one_writer(n1, n2));
  }

  test::EtcdCluster etcd{1};
  storage::EtcdClient client{storage::EtcdOptions{etcd.endpoint_list(), 1000ms}};
  std::array<test::ReservedPort, 2> peer_ports;  // held while the nodes live
  Daemon n1{node_args(etcd, "n1", peer_ports[0])};
  Daemon n2{node_args(etcd, "n2", peer_ports[1]), false};
};

}  // namespace

TEST_CASE("the writer owns every slot, and the other node takes them over when it dies",
          "[cluster][two_nodes]") {
  TwoNodes nodes;
  auto& [etcd, client, peer_ports, n1, n2] = nodes;
  Json stats = n2.connect().call("\"op\":\"stats\"");
  CHECK(stats["cluster"]["node_id"] == "n2");
  CHECK(stats["cluster"]["nodes"].size() == 2);

  // Leases granted through n1, on keys of its own slots.
  LineClient c1 = n1.connect();
  std::string held = key_of(client, "n1", "held/");
  std::string ends = key_of(client, "n1", "ends/");
  std::string bound = key_of(client, "n1", "bound/");
  Json lease = c1.call(acquire_req(held, "h", "\"ttl_ms\":30000"));
  REQUIRE(lease["status"] == "acquired");
  Json ending = c1.call(acquire_req(ends, "e", "\"ttl_ms\":4000"));
  REQUIRE(ending["status"] == "acquired");
  REQUIRE(c1.call(acquire_req(bound, "b",
                              "\"ttl_ms\":30000,\"release_on_disconnect\":true"))["status"] ==
          "acquired");

  n1.kill9();
  auto died = std::chrono::steady_clock::now();
  REQUIRE(wait_until([&] { return slots_owned(n2) == kSlots; }, 10s));
  auto took = std::chrono::steady_clock::now() - died;
  // How soon within the patience is etcd's lessor and the machine's load; reported, not asserted.
  WARN("n2 took n1's slots over "
       << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
       << " ms after kill -9 (lease TTL 2000 ms)");

  LineClient c2 = n2.connect();
  // Still held, as granted, and its holder renews it through the survivor.
  Json got = c2.call(get_req(held));
  REQUIRE(got["lease"].is_object());
  CHECK(got["lease"]["token"] == lease["token"].u64());
  CHECK(got["lease"]["owner"] == "h");
  CHECK(c2.call(
            renew_req(held, "h", "\"token\":" + std::to_string(lease["token"].u64())))["status"] ==
        "renewed");
  // The connection-bound lease's connection died with n1.
  CHECK(c2.call(get_req(bound))["lease"] == nullptr);
  // The other lease ends at its own deadline, by the survivor's timer.
  CHECK(wait_until([&] { return c2.call(history_req(ends))["tenures"][0]["end"] == "expired"; },
                   10s));
  Json ended = c2.call(history_req(ends))["tenures"][0];
  CHECK(ended["token"] == ending["token"].u64());
  CHECK(time_ms(ended["ended_at"]) >= time_ms(ending["expires_at"]));
  CHECK(c2.call(get_req(ends))["lease"] == nullptr);
}

TEST_CASE("a paused node loses its slots, cannot write them, and joins again when it resumes",
          "[cluster][two_nodes]") {
  TwoNodes nodes;
  auto& [etcd, client, peer_ports, n1, n2] = nodes;
  LineClient c1 = n1.connect();
  std::string key = key_of(client, "n1", "paused/");
  Json first = c1.call(acquire_req(key, "a", "\"ttl_ms\":60000"));
  REQUIRE(first["status"] == "acquired");

  ::kill(n1.pid(), SIGSTOP);
  REQUIRE(wait_until([&] { return slots_owned(n2) == kSlots; }, 10s));
  // While n1 sleeps, the key changes hands on n2.
  LineClient c2 = n2.connect();
  REQUIRE(c2.call("\"op\":\"revoke\",\"key\":" + quote(key))["status"] == "revoked");
  Json second = c2.call(acquire_req(key, "b", "\"ttl_ms\":60000"));
  REQUIRE(second["status"] == "acquired");
  CHECK(second["token"].u64() > first["token"].u64());

  ::kill(n1.pid(), SIGCONT);
  // At once: n1's memory still says `a` holds the key, but its lease may be gone, so it must not
  // answer from it.
  Json stale = c1.call(get_req(key));
  INFO(stale.source());
  if (stale["status"] == "ok") CHECK(stale["lease"]["owner"] == "b");
  // n1 finds its lease gone, lets every slot go and registers again; n2 stays the writer.
  REQUIRE(wait_until([&] { return one_writer(n2, n1); }, 15s));
  Json got = n1.connect().call(get_req(key));
  REQUIRE(got["status"] == "ok");
  CHECK(got["lease"]["owner"] == "b");  // wherever the key's slot went, b holds it
  CHECK(got["lease"]["token"] == second["token"].u64());
  // It said so, whichever saw the loss first: its keepalive (the lease expired) or its read of
  // etcd (the claims are gone). And it joined again under a new lease.
  std::string log = n1.log();
  CHECK(log.find("cluster: letting ") != std::string::npos);
  std::size_t registered = 0;
  for (std::size_t at = log.find("registered with etcd lease"); at != std::string::npos;
       at = log.find("registered with etcd lease", at + 1)) {
    ++registered;
  }
  CHECK(registered >= 2);
}

TEST_CASE("a connection bound to a lease on a paused writer is closed once the writer is gone",
          "[cluster][two_nodes]") {
  TwoNodes nodes;
  auto& [etcd, client, peer_ports, n1, n2] = nodes;
  // Through n2, idle: nothing of it is in flight when n1 stalls.
  LineClient c2 = n2.connect();
  std::string key = key_of(client, "n1", "bound/");
  REQUIRE(
      c2.call(acquire_req(key, "b", "\"ttl_ms\":60000,\"release_on_disconnect\":true"))["status"] ==
      "acquired");

  ::kill(n1.pid(), SIGSTOP);
  REQUIRE(wait_until([&] { return slots_owned(n2) == kSlots; }, 10s));
  // n2 released the lease when it took the slots over; the client learns it as it would of a
  // daemon gone, since its connection no longer holds what it bound.
  CHECK(c2.wait_closed(5s));
  CHECK(n2.connect().call(get_req(key))["lease"] == nullptr);
  ::kill(n1.pid(), SIGCONT);
}

TEST_CASE("a waiter for a key of a dead writer is answered unavailable, its connection kept",
          "[cluster][two_nodes]") {
  TwoNodes nodes;
  auto& [etcd, client, peer_ports, n1, n2] = nodes;
  LineClient c1 = n1.connect();
  std::string key = key_of(client, "n1", "waited/");
  REQUIRE(c1.call(acquire_req(key, "h", "\"ttl_ms\":60000"))["status"] == "acquired");
  LineClient c2 = n2.connect();
  auto waiting = c2.send(acquire_req(key, "w", "\"ttl_ms\":60000,\"wait_ms\":60000"));
  REQUIRE(wait_waiters(c1, key, 1));

  n1.kill9();
  Json reply = c2.reply(waiting, 15s);
  CHECK(reply["status"] == "error");
  CHECK(reply["error"] == "unavailable");
  // The same connection asks again once n2 owns the key: h still holds it.
  REQUIRE(wait_until([&] { return slots_owned(n2) == kSlots; }, 10s));
  Json again = c2.call(acquire_req(key, "w", "\"ttl_ms\":60000"));
  CHECK(again["status"] == "held");
  CHECK(again["holder"] == "h");
}

TEST_CASE("a lease taken through a node that dies is still reported lost to its holder",
          "[cluster][two_nodes]") {
  TwoNodes nodes;
  auto& [etcd, client, peer_ports, n1, n2] = nodes;
  LineClient c2 = n2.connect();
  std::string expiring = key_of(client, "n1", "expiring/");
  std::string revoked = key_of(client, "n1", "revoked/");
  // Usually still held when n2 has taken n1's slots over (lease TTL 2 s + 1 s); either way it
  // ends after the link to n1 broke.
  Json lease = c2.call(acquire_req(expiring, "h", "\"ttl_ms\":8000"));
  REQUIRE(lease["status"] == "acquired");
  REQUIRE(c2.call(acquire_req(revoked, "h", "\"ttl_ms\":60000"))["status"] == "acquired");
  // Re-acquired on n1's own socket, which is told of its loss from then on: c2 is not told, and
  // not later by n2 either, once the node that told the loss is gone.
  std::string moved = key_of(client, "n1", "moved/");
  REQUIRE(c2.call(acquire_req(moved, "m", "\"ttl_ms\":60000"))["status"] == "acquired");
  LineClient c1 = n1.connect();
  REQUIRE(c1.call(acquire_req(moved, "m", "\"ttl_ms\":300"))["status"] == "acquired");
  Json moved_lost = c1.event(3000ms);
  CHECK(moved_lost["event"] == "lost");
  CHECK(moved_lost["key"] == moved);

  n1.kill9();
  REQUIRE(wait_until([&] { return slots_owned(n2) == kSlots; }, 10s));
  REQUIRE(n2.connect().call("\"op\":\"revoke\",\"key\":" + quote(revoked))["status"] == "revoked");
  // Each once, in either order: a slow takeover may have found the first lease overdue.
  std::map<std::string, Json> lost;
  for (int i = 0; i < 2; ++i) {
    auto event = c2.next_event(20s);
    REQUIRE(event);
    CHECK((*event)["event"] == "lost");
    lost[(*event)["key"].str()] = *event;
  }
  REQUIRE(lost.count(revoked) == 1);
  CHECK(lost[revoked]["reason"] == "revoked");
  REQUIRE(lost.count(expiring) == 1);
  CHECK(lost[expiring]["reason"] == "expired");
  CHECK(lost[expiring]["token"].u64() == lease["token"].u64());
  CHECK_FALSE(c2.next_event(1500ms));
}
