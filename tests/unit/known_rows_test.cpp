#include "storage/known_rows.hpp"

#include <catch2/catch.hpp>

using namespace tenure;

TEST_CASE("known rows answer for a slot only once scanned, and only under that claim", "[slots]") {
  storage::KnownRows rows;
  CHECK_FALSE(rows.surely_absent(3, 100, 42));  // never scanned

  // A write sent before the scan began, under the claim the scan runs under, is kept: its
  // transaction may land after the scan's read.
  rows.may_write(3, 100, 7);
  rows.scan_started(3, 100);
  CHECK_FALSE(rows.surely_absent(3, 100, 42));  // not complete yet
  rows.may_write(3, 100, 8);
  rows.scan_done(3, 100, {9});
  CHECK(rows.surely_absent(3, 100, 42));
  for (std::uint64_t known : {7, 8, 9}) CHECK_FALSE(rows.surely_absent(3, 100, known));
  CHECK_FALSE(rows.surely_absent(3, 99, 42));   // asked under another claim
  CHECK_FALSE(rows.surely_absent(4, 100, 42));  // another slot

  // An older claim's news changes nothing; a newer claim starts over (others may have written).
  rows.may_write(3, 50, 42);
  CHECK(rows.surely_absent(3, 100, 42));
  rows.scan_done(3, 50, {42});
  CHECK(rows.surely_absent(3, 100, 42));
  rows.may_write(3, 200, 10);
  CHECK_FALSE(rows.surely_absent(3, 200, 42));
  CHECK_FALSE(rows.surely_absent(3, 100, 42));
  rows.scan_started(3, 200);
  rows.scan_done(3, 200, {});
  CHECK(rows.surely_absent(3, 200, 42));
  CHECK_FALSE(rows.surely_absent(3, 200, 10));  // written under the new claim before its scan
  CHECK(rows.surely_absent(3, 200, 7));  // what the old claim listed went with it: the scan counts
}
