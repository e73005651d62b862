#include "core/clock.hpp"

#include <cstdio>
#include <cstring>
#include <limits>

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

Millis SystemClock::not_before(Millis floor) {
  const Millis behind = floor - now();
  if (behind <= 0) return 0;
  wall_origin_ += behind;
  return behind;
}

namespace {

// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm): replies format a time or
// two each, and gmtime_r + snprintf cost more than the rest of formatting a reply.
void civil_from_days(std::int64_t days, int& year, unsigned& month, unsigned& day) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  day = doy - (153 * mp + 2) / 5 + 1;
  month = mp < 10 ? mp + 3 : mp - 9;
  year = static_cast<int>(static_cast<std::int64_t>(yoe) + era * 400 + (month <= 2 ? 1 : 0));
}

void put_digits(char* out, unsigned value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

// The text up to the second ("2026-11-30T03:55:33") of the last two seconds formatted on this
// thread: a storm's events and notices fall in the same second, and a lease's reply formats now
// and now + ttl, each time in one of two seconds; only their milliseconds differ (the date was two
// thirds of formatting a time). Trivial, so there is no TLS guard per access.
struct SecondText {
  std::int64_t second = std::numeric_limits<std::int64_t>::min();  // none yet
  char chars[19]{};
};
struct RecentSeconds {
  SecondText slots[2];
  unsigned next = 0;  // the slot a new second takes: the older of the two
};
constinit thread_local RecentSeconds recent_seconds;

}  // namespace

TimeText::TimeText(Millis t) {
  constexpr std::string_view kShape = "0000-00-00T00:00:00.000Z";
  static_assert(sizeof chars_ >= kShape.size());
  // Floor division, without forming t - 999 or second * 1000 (they overflow near the ends of the
  // range).
  std::int64_t below = t % 1000;
  std::int64_t second = t / 1000 - (below < 0 ? 1 : 0);
  auto ms = static_cast<unsigned>(below < 0 ? below + 1000 : below);
  RecentSeconds& recent = recent_seconds;
  SecondText* text = &recent.slots[0];
  if (text->second != second) text = &recent.slots[1];
  if (text->second != second) {
    constexpr std::int64_t kDay = 86'400;
    std::int64_t days = second / kDay - (second % kDay < 0 ? 1 : 0);
    auto second_of_day = static_cast<unsigned>(second - days * kDay);
    int year;
    unsigned month, day;
    civil_from_days(days, year, month, day);
    if (year < 0 || year > 9999) {
      int n = std::snprintf(chars_, sizeof chars_, "%+lldms", static_cast<long long>(t));
      size_ = static_cast<std::size_t>(n);  // out of RFC 3339; at most 22 characters
      return;
    }
    text = &recent.slots[recent.next];
    recent.next ^= 1;
    kShape.copy(text->chars, sizeof text->chars);
    put_digits(&text->chars[0], static_cast<unsigned>(year), 4);
    put_digits(&text->chars[5], month, 2);
    put_digits(&text->chars[8], day, 2);
    put_digits(&text->chars[11], second_of_day / 3600, 2);
    put_digits(&text->chars[14], second_of_day / 60 % 60, 2);
    put_digits(&text->chars[17], second_of_day % 60, 2);
    text->second = second;
  }
  std::memcpy(chars_, text->chars, sizeof text->chars);
  chars_[19] = '.';
  put_digits(&chars_[20], ms, 3);
  chars_[23] = 'Z';
  size_ = kShape.size();
}

std::string format_time(Millis t) { return std::string(TimeText(t).view()); }

}  // namespace tenure
