#include "storage/slot_claims.hpp"

#include <catch2/catch.hpp>

using namespace tenure;

TEST_CASE("a slot claim is forgotten only by the claim that was lost", "[core]") {
  storage::SlotClaims claims;
  std::vector<std::pair<std::uint32_t, std::int64_t>> heard;
  claims.set_lost_handler(
      [&](std::uint32_t slot, std::int64_t revision) { heard.emplace_back(slot, revision); });
  CHECK_FALSE(claims.claim_revision(3));
  claims.claim(3, 100);
  claims.claim(63, 7);
  CHECK(claims.claim_revision(3) == 100);
  CHECK(claims.owned() == std::vector<std::uint32_t>{3, 63});

  // The membership claimed the slot again meanwhile: a report about the old claim changes
  // nothing and is not passed on.
  claims.claim(3, 200);
  claims.lost(3, 100);
  CHECK(claims.claim_revision(3) == 200);
  CHECK(heard.empty());

  claims.lost(3, 200);
  CHECK_FALSE(claims.owns(3));
  CHECK(heard == std::vector<std::pair<std::uint32_t, std::int64_t>>{{3, 200}});
  claims.lost(3, 200);  // once
  CHECK(heard.size() == 1);

  claims.release(63);
  CHECK(claims.owned().empty());
}
