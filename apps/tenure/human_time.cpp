#include "apps/tenure/human_time.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "core/duration.hpp"

namespace tenure::cli {
namespace {

std::tm local_tm(Millis t) {
  std::time_t secs = static_cast<std::time_t>(t / 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  return tm;
}

}  // namespace

Millis wall_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string local_time(Millis t, Millis now) {
  std::tm tm = local_tm(t);
  std::tm today = local_tm(now);
  bool same_day = tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday;
  char buf[32];
  std::strftime(buf, sizeof buf, same_day ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string relative_time(Millis t, Millis now) {
  return t >= now ? "in " + format_duration(t - now) : format_duration(now - t) + " ago";
}

std::string describe_expiry(std::optional<Millis> expires_at, Millis now) {
  if (!expires_at) return "open-ended";
  std::string verb = *expires_at >= now ? "expires " : "expired ";
  return verb + relative_time(*expires_at, now) + " (" + local_time(*expires_at, now) + ")";
}

}  // namespace tenure::cli
