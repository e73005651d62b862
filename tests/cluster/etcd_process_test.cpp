#include "tests/support/etcd_process.hpp"

#include <catch2/catch.hpp>

using namespace tenure;

TEST_CASE("the fixture runs a 3-member etcd that survives the loss of one", "[etcd_process]") {
  test::EtcdCluster etcd(3);
  REQUIRE(etcd.size() == 3);
  CHECK(etcd.endpoints() == etcd.endpoint(0) + "," + etcd.endpoint(1) + "," + etcd.endpoint(2));
  for (int i = 0; i < 3; ++i) CHECK(etcd.healthy(i));

  etcd.kill(0);
  CHECK_FALSE(etcd.running(0));
  CHECK_FALSE(etcd.healthy(0));
  etcd.wait_healthy();  // the others elect a leader if it was one
  CHECK(etcd.healthy(1));
  CHECK(etcd.healthy(2));

  etcd.stop(1);  // two of three gone: no quorum, no health
  CHECK_FALSE(etcd.healthy(2, std::chrono::seconds(2)));
  etcd.cont(1);
  etcd.restart(0);
  etcd.wait_healthy();
  for (int i = 0; i < 3; ++i) CHECK(etcd.healthy(i));
  CHECK(etcd.log(0).find("m1") != std::string::npos);
}
