// Command-line durations.
#include "core/duration.hpp"

#include <catch2/catch.hpp>

namespace tenure {

TEST_CASE("durations take ms, s, m, h, d, fractions and compounds", "[core]") {
  CHECK(parse_duration("250ms") == 250);
  CHECK(parse_duration("30s") == 30'000);
  CHECK(parse_duration("15m") == 900'000);
  CHECK(parse_duration("24h") == 86'400'000);
  CHECK(parse_duration("2d") == 172'800'000);
  CHECK(parse_duration("1h30m") == 5'400'000);
  CHECK(parse_duration("1m30s250ms") == 90'250);
  CHECK(parse_duration("1.5s") == 1500);
  CHECK(parse_duration("0.25h") == 900'000);
  CHECK(parse_duration(".5s") == 500);
  CHECK(parse_duration("0") == 0);
  CHECK(parse_duration("0s") == 0);
  for (auto bad : {"", "ms", "-5s", "5 s", "5sec", "5min", "1.5ms", "0.0001s", "1.s", "s5",
                   "99999999999999999999h", "9999999999999999d", "1h-5m"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad));
  }
}

TEST_CASE("a duration without a unit is refused with a hint", "[core]") {
  std::string error;
  CHECK_FALSE(parse_duration("5", &error));
  CHECK(error == "'5' has no unit; write 5s, 5m or 5ms");
  CHECK_FALSE(parse_duration("5min", &error));
  CHECK(error.find("'5min' is not a duration") != std::string::npos);
  CHECK(error.find("1h30m") != std::string::npos);
  CHECK_FALSE(parse_duration("-5s", &error));
  CHECK(error.find("negative") != std::string::npos);
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
