#include "transports/owner_names.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace tenure {
namespace {

TEST_CASE("a connection's owner is stored once, however often it is named", "[transport]") {
  OwnerNames names;
  SharedString first = names.name("an owner name longer than any small string buffer");
  SharedString again = names.name("an owner name longer than any small string buffer");
  CHECK(again.data() == first.data());
  CHECK(names.name("another owner").data() != first.data());
}

TEST_CASE("the owners of a pipeline of lock cycles stay found while others come and go",
          "[transport]") {
  // As tenure-bench: a new owner per cycle, 16 cycles in flight; each release names the owner
  // its acquire named 15 new owners earlier.
  OwnerNames names;
  std::vector<SharedString> in_flight;
  int found = 0;
  constexpr int kCycles = 10'000;
  for (int cycle = 0; cycle < kCycles + 16; ++cycle) {
    if (cycle < kCycles) {
      in_flight.push_back(names.name("bench-owner-with-a-long-nonce-" + std::to_string(cycle)));
    }
    if (cycle >= 16) {
      const SharedString& acquired = in_flight[cycle - 16];
      found += names.name(acquired).data() == acquired.data() ? 1 : 0;
    }
  }
  CHECK(found >= kCycles * 99 / 100);
}

}  // namespace
}  // namespace tenure
