// Clients on all three nodes racing for the same few keys: at most one holder at any moment.
#include <catch2/catch.hpp>

#include "tests/cluster/checks.hpp"

namespace cluster {
namespace {

TEST_CASE("clients on all three nodes race for the same keys", CLUSTER_TAG "[race]") {
  Cluster cluster;
  FencingChecker checker;
  Watcher watcher(cluster.sockets_from(1));
  watcher.wait_started();
  // Three keys: whichever node owns each, two thirds of the racers reach it forwarded.
  Load load(checker, {.keys = {"race/a", "race/b", "race/c"}, .max_hold = 20ms}, cluster.spread(9));
  CHECK(load.wait_progress(300, 60000ms));
  check_after_load(cluster, load, checker, {&watcher}, "race");
  CHECK(load.counters().held > 0);  // they did race
}

}  // namespace
}  // namespace cluster
