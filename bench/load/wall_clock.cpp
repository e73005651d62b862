#include "bench/load/wall_clock.hpp"

#include <chrono>

namespace tenure::bench {

std::int64_t wall_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::int64_t parse_rfc3339_ms(std::string_view t) {
  if (t.size() != 24 || t[4] != '-' || t[10] != 'T' || t[19] != '.' || t[23] != 'Z') return 0;
  auto num = [&](std::size_t at, std::size_t len) {
    int v = 0;
    for (std::size_t i = at; i < at + len; ++i) v = v * 10 + (t[i] - '0');
    return v;
  };
  using namespace std::chrono;
  sys_days day = year{num(0, 4)} / month{static_cast<unsigned>(num(5, 2))} /
                 std::chrono::day{static_cast<unsigned>(num(8, 2))};
  auto at = day + hours{num(11, 2)} + minutes{num(14, 2)} + seconds{num(17, 2)} +
            milliseconds{num(20, 3)};
  return duration_cast<milliseconds>(at.time_since_epoch()).count();
}

}  // namespace tenure::bench
