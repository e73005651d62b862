// The client libraries' endpoint lists against a real cluster: a lease taken through a node that
// dies keeps renewing through another one (§10: its holder's next renew through another node
// succeeds), and a watch resumes there by revision.
#include <catch2/catch.hpp>

#include "client/tenure_client.hpp"
#include "tests/cluster/checks.hpp"
#include "tests/e2e/e2e.hpp"

namespace cluster {
namespace {

TEST_CASE("a client's lease outlives the node it was taken through", CLUSTER_TAG "[client]") {
  Cluster cluster;
  const int victim = *cluster.owner_of("client/");
  const std::string key = cluster.key_owned_by(victim, "client/");
  // Renewed every 2 s; a third of the TTL leaves time for a failover between two renewals.
  auto client = tenure::Client::connect(
      {.endpoints = cluster.sockets_from(victim), .timeout = cluster.failover_bound() + 1000ms});
  REQUIRE(client);
  auto watch = client->watch({.prefix = "client/"});
  REQUIRE(watch);
  auto lease = client->acquire_lease(key, {.ttl = 6000ms});
  REQUIRE(lease);
  const std::uint64_t token = lease->token();
  auto first = watch->next(5000ms);
  REQUIRE(first);
  CHECK(first->type == "acquired");

  cluster.kill9(victim);
  // Through another node, once the key's slot has a new owner.
  CHECK(e2e::wait_until([&] { return bool(lease->renew()); }, cluster.failover_bound() + 3000ms));
  CHECK_FALSE(lease->lost());
  CHECK(client->address() != cluster.socket(victim));
  auto c = cluster.connect(running_node(cluster));
  // That node may not have heard of the new owner yet: it answers `unavailable`, retry (§10).
  e2e::Json info;
  CHECK(e2e::wait_until(
      [&] {
        info = c.call(e2e::get_req(key));
        return info["status"] == "ok";
      },
      cluster.failover_bound() + 3000ms));
  CHECK(info["lease"]["token"] == token);
  CHECK(info["lease"]["owner"] == lease->owner());

  // The watch resumed on the new node from the revision after the last event it gave: the
  // renewals (the background ones and ours), then the release, with consecutive revisions.
  CHECK(lease->release());
  std::uint64_t previous = first->revision;
  for (;;) {
    auto event = watch->next(5000ms);
    REQUIRE(event);
    CHECK(event->revision == previous + 1);
    previous = event->revision;
    if (event->type == "released") break;
    CHECK(event->type == "renewed");
  }
}

}  // namespace
}  // namespace cluster
