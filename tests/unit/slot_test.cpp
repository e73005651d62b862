#include "core/slot.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace tenure;

// Every node of a cluster must map a key to the same slot, whatever its build: these values are
// the protocol, not an implementation detail.
TEST_CASE("a key's slot is FNV-1a 64 of its bytes modulo 64", "[core]") {
  STATIC_REQUIRE(kSlots == 64);
  // The published FNV-1a 64 test vectors.
  CHECK(fnv1a_64("") == 0xcbf29ce484222325ull);
  CHECK(fnv1a_64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a_64("foobar") == 0x85944171f73967e8ull);
  CHECK(slot_of("a") == 12);
  CHECK(slot_of("foobar") == 40);
  CHECK(slot_of("job/42") == 15);
  CHECK(slot_of("github.com/rysweet/amplihack-rs/pr/1051") == 57);
  CHECK(slot_of("clé") == 54);  // bytes, not characters
}

TEST_CASE("keys spread over every slot", "[core]") {
  std::uint32_t seen[kSlots] = {};
  for (int i = 0; i < 6400; ++i) ++seen[slot_of("key/" + std::to_string(i))];
  for (auto count : seen) CHECK(count > 50);
}
