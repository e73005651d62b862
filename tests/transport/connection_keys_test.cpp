// A connection remembers exactly the keys the engine must look at when it closes.
#include "transports/connection_keys.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

namespace tenure {

TEST_CASE("keys stay while a lease or a waiter may be bound to the connection", "[transport]") {
  ConnectionKeys keys;
  keys.acquire_sent("held");
  keys.acquire_answered("held", true);
  keys.acquire_sent("refused");
  keys.acquire_answered("refused", false);
  keys.acquire_sent("waiting");
  keys.acquire_sent("released");
  keys.acquire_answered("released", true);
  keys.lease_ended("released");

  auto taken = keys.take();
  std::sort(taken.begin(), taken.end());
  CHECK(taken == std::vector<std::string>{"held", "waiting"});
  CHECK(keys.take().empty());
}

TEST_CASE("a key with an acquire in flight survives the end of its lease", "[transport]") {
  ConnectionKeys keys;
  keys.acquire_sent("k");
  keys.acquire_answered("k", true);
  keys.acquire_sent("k");
  keys.lease_ended("k");
  CHECK(keys.take() == std::vector<std::string>{"k"});
}

}  // namespace tenure
