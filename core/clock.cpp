#include "core/clock.hpp"

#include <cstdio>
#include <ctime>

namespace tenure {

SystemClock::SystemClock()
    : steady_origin_(std::chrono::steady_clock::now()),
      wall_origin_(std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count()) {}

Millis SystemClock::now() const {
  auto elapsed = std::chrono::steady_clock::now() - steady_origin_;
  return wall_origin_ + std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
}

std::string format_time(Millis t) {
  std::time_t secs = static_cast<std::time_t>(t >= 0 ? t / 1000 : (t - 999) / 1000);
  int ms = static_cast<int>(t - static_cast<Millis>(secs) * 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

}  // namespace tenure
