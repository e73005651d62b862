#include "core/clock.hpp"

#include <cstdio>

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

}  // namespace

TimeText::TimeText(Millis t) {
  // Floor division, without forming t - 86'399'999 or days * 86'400'000 (they overflow near the
  // ends of the range).
  constexpr std::int64_t kDay = 86'400'000;
  std::int64_t days = t / kDay - (t % kDay < 0 ? 1 : 0);
  auto ms_of_day = static_cast<unsigned>((t % kDay + kDay) % kDay);
  int year;
  unsigned month, day;
  civil_from_days(days, year, month, day);
  if (year < 0 || year > 9999) {
    int n = std::snprintf(chars_, sizeof chars_, "%+lldms", static_cast<long long>(t));
    size_ = static_cast<std::size_t>(n);  // out of RFC 3339; at most 22 characters
    return;
  }
  constexpr std::string_view kShape = "0000-00-00T00:00:00.000Z";
  kShape.copy(chars_, kShape.size());
  size_ = kShape.size();
  put_digits(&chars_[0], static_cast<unsigned>(year), 4);
  put_digits(&chars_[5], month, 2);
  put_digits(&chars_[8], day, 2);
  put_digits(&chars_[11], ms_of_day / 3'600'000, 2);
  put_digits(&chars_[14], ms_of_day / 60'000 % 60, 2);
  put_digits(&chars_[17], ms_of_day / 1000 % 60, 2);
  put_digits(&chars_[20], ms_of_day % 1000, 3);
}

std::string format_time(Millis t) { return std::string(TimeText(t).view()); }

}  // namespace tenure
