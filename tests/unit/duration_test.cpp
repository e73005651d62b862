// Command-line durations.
#include "core/duration.hpp"

#include <catch2/catch.hpp>

namespace tenure {

TEST_CASE("durations take ms, s, m, h or bare milliseconds", "[core]") {
  CHECK(parse_duration("250ms") == 250);
  CHECK(parse_duration("30s") == 30'000);
  CHECK(parse_duration("15m") == 900'000);
  CHECK(parse_duration("24h") == 86'400'000);
  CHECK(parse_duration("1500") == 1500);
  CHECK(parse_duration("0") == 0);
  for (auto bad : {"", "ms", "-5s", "5 s", "5sec", "1.5s", "99999999999999999999h"}) {
    CHECK_FALSE(parse_duration(bad));
  }
}

TEST_CASE("durations print as their two largest units", "[core]") {
  CHECK(format_duration(850) == "850ms");
  CHECK(format_duration(45'000) == "45s");
  CHECK(format_duration(899'000) == "14m59s");
  CHECK(format_duration(900'000) == "15m");
  CHECK(format_duration(7'500'000) == "2h5m");
  CHECK(format_duration(3 * 86'400'000LL + 4 * 3'600'000) == "3d4h");
}

}  // namespace tenure
