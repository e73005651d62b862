// One etcd member of three dies under load: service continues (§10), with nothing going back.
#include <catch2/catch.hpp>
#include <cstdio>

#include "tests/cluster/checks.hpp"

namespace cluster {
namespace {

TEST_CASE("the cluster keeps serving when an etcd member dies", CLUSTER_TAG "[etcd]") {
  Cluster cluster;
  FencingChecker checker;
  Watcher watcher(cluster.sockets_from(0));
  watcher.wait_started();
  Load load(checker, {.keys = {"etcd/a", "etcd/b", "etcd/c", "etcd/d", "etcd/e", "etcd/f"}},
            cluster.spread(6));
  REQUIRE(load.wait_progress(30, 30000ms));

  // The first member: every node's first endpoint, so each must move to another one.
  auto killed_at = std::chrono::steady_clock::now();
  cluster.etcd().kill(0);
  REQUIRE(load.wait_progress(1, cluster.failover_bound() + 10000ms));
  std::printf("cluster: etcd member m1 killed: the next grant after %lld ms\n",
              ms_since(killed_at));
  CHECK(load.wait_progress(50, 30000ms));
  for (int i = 0; i < cluster.size(); ++i) {
    INFO("node " << cluster.node_id(i) << " should still answer");
    CHECK(cluster.connect(i).call("\"op\":\"ping\"")["status"] == "pong");
  }
  check_after_load(cluster, load, checker, {&watcher}, "etcd");
}

}  // namespace
}  // namespace cluster
