// Failover under load (§10): kill -9 of the writer (the node owning every slot), then
// SIGSTOP/SIGCONT of the node that took over; after each, one node owns every slot again, the
// keys are served again within --cluster-lease-ttl + 1 s, leases granted through the lost node stay
// held until their own deadlines (and their holders renew them through another node),
// connection-bound ones are released, and nothing a client was told goes back.
#include <catch2/catch.hpp>
#include <cstdio>

#include "core/slot.hpp"
#include "tests/cluster/checks.hpp"
#include "tests/e2e/e2e.hpp"

namespace cluster {
namespace {

// The probe's own round trips and a loaded 2-core machine's scheduling, on top of the bound.
constexpr Millis kProbeSlack{1000};

// n keys "PREFIX<i>" in `slot`.
std::vector<std::string> keys_in_slot(const std::string& prefix, std::uint32_t slot, int n) {
  std::vector<std::string> keys;
  for (int i = 0; static_cast<int>(keys.size()) < n; ++i) {
    std::string key = prefix + std::to_string(i);
    if (tenure::slot_of(key) == slot) keys.push_back(key);
  }
  return keys;
}

// Acquires `key` through node `via` until granted; the time from `since` to the grant.
long long time_to_serve(Cluster& cluster, int via, const std::string& key,
                        std::chrono::steady_clock::time_point since, FencingChecker& checker) {
  auto c = cluster.connect(via);
  Sequence sequence{"probe through " + cluster.node_id(via)};
  for (;;) {
    e2e::Json r = c.call(e2e::acquire_req(key, "probe", "\"ttl_ms\":60000"),
                         cluster.failover_bound() + 5000ms);
    checker.on_reply(r, &sequence);
    if (r["status"] == "acquired") {
      long long ms = ms_since(since);
      checker.release_sent(key, r["token"].u64());
      checker.on_reply(c.call(e2e::release_req(key, "probe")), &sequence);
      return ms;
    }
    INFO(r.source());
    REQUIRE(outcome(r) == "error:unavailable");
    REQUIRE(ms_since(since) < (cluster.failover_bound() + 20000ms).count());
    std::this_thread::sleep_for(20ms);
  }
}

struct Anchor {
  std::string key;
  std::uint64_t token = 0;
};

// Leases granted through node `via`, in `keys`' slots: they must outlive the node.
std::vector<Anchor> anchor(Cluster& cluster, int via, const std::vector<std::string>& keys,
                           FencingChecker& checker, const std::string& extra) {
  auto c = cluster.connect(via);
  std::vector<Anchor> out;
  for (const auto& key : keys) {
    e2e::Json r = c.call(e2e::acquire_req(key, "anchor-" + key, extra));
    checker.on_reply(r);
    INFO(r.source());
    REQUIRE(r["status"] == "acquired");
    out.push_back({key, r["token"].u64()});
  }
  return out;
}

// The anchors are still held by their tenures, and a renew through `via` keeps them.
void check_anchors_held(Cluster& cluster, int via, const std::vector<Anchor>& anchors,
                        FencingChecker& checker) {
  auto c = cluster.connect(via);
  for (const auto& a : anchors) {
    e2e::Json g = c.call(e2e::get_req(a.key), cluster.failover_bound() + 2000ms);
    INFO("anchor " << a.key << " token " << a.token << ": " << g.source());
    CHECK(g["lease"]["token"] == a.token);
    e2e::Json r = c.call(e2e::renew_req(a.key, "anchor-" + a.key), cluster.failover_bound());
    checker.on_reply(r);
    INFO(r.source());
    CHECK(r["status"] == "renewed");
  }
}

// Connection-bound leases granted through a node that died are released (not kept to their
// deadlines) once the keys are served again.
void check_released(Cluster& cluster, int via, const std::vector<Anchor>& anchors,
                    FencingChecker& checker) {
  auto c = cluster.connect(via);
  for (const auto& a : anchors) {
    checker.disconnected(a.key, a.token);
    INFO("connection-bound " << a.key << " token " << a.token);
    CHECK(e2e::wait_free(c, a.key, cluster.failover_bound() + kProbeSlack));
  }
}

// The new owner's timer ends a lease it took over at the lease's own deadline (armed from the
// persisted wall-clock one), in the same step handing the key to a waiter on another node; the
// checker sees that the grant came no earlier than the deadline.
void check_expires_on_new_owner(Cluster& cluster, int via, const Anchor& lease,
                                FencingChecker& checker) {
  auto c = cluster.connect(via);
  Sequence sequence{"heir"};
  e2e::Json r;
  for (int attempt = 0; attempt < 100; ++attempt) {
    r = c.call(e2e::acquire_req(lease.key, "heir", "\"ttl_ms\":60000,\"wait_ms\":10000"), 20000ms);
    checker.on_reply(r, &sequence);
    if (outcome(r) != "error:unavailable") break;
    std::this_thread::sleep_for(50ms);
  }
  INFO(lease.key << " token " << lease.token << ": " << r.source());
  REQUIRE(r["status"] == "acquired");
  CHECK(r["token"] == lease.token + 1);
  auto history = e2e::full_history(c, lease.key);
  REQUIRE(history.size() >= 2);
  CHECK(history[1]["token"] == lease.token);
  CHECK(history[1]["end"] == "expired");
}

// The writer owns every slot (docs/cluster.md): node `writer` reports all 64, the others none.
// Its claims are one etcd transaction, but it adopts (loads and re-arms) the slots one by one
// after it, so `slots_owned` reaches 64 a little later than the claims: wait for that first.
void check_one_writer(Cluster& cluster, int writer) {
  auto adopted = [&] {
    return cluster.connect(writer).call("\"op\":\"stats\"")["cluster"]["slots_owned"] ==
           tenure::kSlots;
  };
  CHECK(e2e::wait_until(adopted, cluster.failover_bound()));
  for (int i = 0; i < cluster.size(); ++i) {
    if (!cluster.running(i)) continue;
    e2e::Json s = cluster.connect(i).call("\"op\":\"stats\"");
    INFO(cluster.node_id(i) << ", the writer " << cluster.node_id(writer) << ": " << s.source());
    CHECK(s["cluster"]["slots_owned"] == (i == writer ? tenure::kSlots : 0u));
  }
}

TEST_CASE("kill -9 and SIGSTOP of the writer under load", CLUSTER_TAG "[failover]") {
  Cluster cluster;
  FencingChecker checker;

  // One node, the writer, owns every slot: the hot slots are its.
  REQUIRE(cluster.writer());
  const int victim = *cluster.writer();
  check_one_writer(cluster, victim);
  REQUIRE(cluster.owner_of("hot/") == victim);
  const std::uint32_t hot = tenure::slot_of("hot/");
  std::string warm = "warm/";
  for (int i = 0; tenure::slot_of(warm) == hot; ++i) warm = "warm/" + std::to_string(i);
  const std::uint32_t hot2 = tenure::slot_of(warm);
  auto hot_keys = keys_in_slot("hot/", hot, 4);
  auto hot2_keys = keys_in_slot("warm/", hot2, 4);
  std::vector<std::string> keys = hot_keys;
  keys.insert(keys.end(), hot2_keys.begin(), hot2_keys.end());
  keys.push_back("cold/a");
  keys.push_back("cold/b");

  // A watch that begins on the node about to fail, and must resume elsewhere by revision.
  Watcher watch_killed(cluster.sockets_from(victim));
  watch_killed.wait_started();

  Load load(checker, {.keys = keys}, cluster.spread(6));
  REQUIRE(load.wait_progress(30, 30000ms));

  // -- kill -9 of the hot slot's owner ---------------------------------------------------------
  auto anchors =
      anchor(cluster, victim, keys_in_slot("anchor/", hot, 2), checker, "\"ttl_ms\":8000");
  auto other_slot =
      anchor(cluster, victim, keys_in_slot("anchor/", hot2, 1), checker, "\"ttl_ms\":8000");
  anchors.insert(anchors.end(), other_slot.begin(), other_slot.end());
  auto bound = anchor(cluster, victim,
                      {keys_in_slot("bound/", hot, 1)[0], keys_in_slot("bound/", hot2, 1)[0]},
                      checker, "\"ttl_ms\":60000,\"release_on_disconnect\":true");
  // Granted through the node about to die, with a deadline after the failover.
  const Anchor expiring =
      anchor(cluster, victim, keys_in_slot("expiring/", hot, 1), checker, "\"ttl_ms\":4000")[0];
  const int survivor = (victim + 2) % cluster.size();
  auto killed_at = std::chrono::steady_clock::now();
  cluster.kill9(victim);
  long long kill_ms =
      time_to_serve(cluster, survivor, keys_in_slot("probe/", hot, 1)[0], killed_at, checker);
  std::printf(
      "cluster failover: kill -9 of the writer %s: served again after %lld ms (bound %lld ms)\n",
      cluster.node_id(victim).c_str(), kill_ms,
      static_cast<long long>(cluster.failover_bound().count()));
  CHECK(kill_ms <= (cluster.failover_bound() + kProbeSlack).count());
  // One new writer took every slot over.
  const int writer2 = cluster.wait_owner("hot/", victim, cluster.failover_bound());
  CHECK(cluster.writer() == writer2);
  CHECK(e2e::wait_until([&] { return cluster.owner_of(warm) == writer2; }, 2000ms));
  check_one_writer(cluster, writer2);
  check_anchors_held(cluster, survivor, anchors, checker);
  check_released(cluster, survivor, bound, checker);
  CHECK(load.wait_progress(20, 30000ms));
  CHECK(e2e::wait_until([&] { return watch_killed.resumes() > 0; }, 10000ms));
  check_expires_on_new_owner(cluster, survivor, expiring, checker);

  // -- SIGSTOP / SIGCONT of the new writer ----------------------------------------------------
  const int stopped = writer2;
  const int last = running_node(cluster, stopped);
  Watcher watch_stopped(cluster.sockets_from(stopped));
  watch_stopped.wait_started();
  const std::string stopped_key = cluster.key_owned_by(stopped, "probe2/");
  auto anchors2 =
      anchor(cluster, stopped, keys_in_slot("anchor2/", hot2, 2), checker, "\"ttl_ms\":8000");
  // On the paused node's own socket, and due while it is paused: the new owner ends it, and the
  // node, back, tells the connection, open all along.
  auto paused_holder = cluster.connect(stopped);
  const std::string paused_key = cluster.key_owned_by(stopped, "paused/");
  e2e::Json paused = paused_holder.call(e2e::acquire_req(paused_key, "paused", "\"ttl_ms\":1500"));
  checker.on_reply(paused);
  REQUIRE(paused["status"] == "acquired");
  auto stopped_at = std::chrono::steady_clock::now();
  cluster.stop(stopped);
  long long stop_ms = time_to_serve(cluster, last, stopped_key, stopped_at, checker);
  std::printf("cluster failover: SIGSTOP of the writer %s: served again after %lld ms\n",
              cluster.node_id(stopped).c_str(), stop_ms);
  CHECK(stop_ms <= (cluster.failover_bound() + kProbeSlack).count());
  check_anchors_held(cluster, last, anchors2, checker);
  CHECK(load.wait_progress(20, 30000ms));
  // The watch that was on the paused node carries on elsewhere while it is still paused.
  CHECK(e2e::wait_until([&] { return watch_stopped.resumes() > 0; }, 10000ms));
  cluster.cont(stopped);
  // Back from its pause, the node was fenced off (its claims are gone): it serves again only
  // through the new owners, and nothing it had in flight may commit (the checker would see it).
  auto resumed_at = std::chrono::steady_clock::now();
  long long rejoin_ms =
      time_to_serve(cluster, stopped, stopped_key + "/again", resumed_at, checker);
  std::printf("cluster failover: %s served again %lld ms after SIGCONT\n",
              cluster.node_id(stopped).c_str(), rejoin_ms);
  e2e::Json paused_lost = paused_holder.event(cluster.failover_bound() + 10000ms);
  INFO(paused_lost.source());
  CHECK(paused_lost["event"] == "lost");
  CHECK(paused_lost["key"] == paused_key);
  CHECK(paused_lost["token"] == paused["token"].u64());
  CHECK(paused_lost["reason"] == "expired");

  // -- the killed node comes back --------------------------------------------------------------
  cluster.restart(victim);
  cluster.wait_settled();
  CHECK(load.wait_progress(20, 30000ms));
  check_after_load(cluster, load, checker, {&watch_killed, &watch_stopped}, "failover");
  CHECK(load.counters().reconnects > 0);
}

}  // namespace
}  // namespace cluster
