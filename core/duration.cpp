#include "core/duration.hpp"

#include <array>
#include <cstdint>
#include <limits>

namespace tenure {
namespace {

struct Unit {
  std::string_view suffix;
  Millis ms;
};

// Longest suffix first, so that "ms" is not read as "m" followed by garbage.
constexpr std::array<Unit, 5> kUnits{{
    {"ms", 1},
    {"s", 1000},
    {"m", 60'000},
    {"h", 3'600'000},
    {"d", 86'400'000},
}};

constexpr Millis kMax = std::numeric_limits<Millis>::max();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads digits into `value` (saturating at kMax); returns how many.
std::size_t read_digits(std::string_view text, std::size_t pos, Millis& value, int& count) {
  std::size_t start = pos;
  for (; pos < text.size() && is_digit(text[pos]); ++pos) {
    value = value > (kMax - 9) / 10 ? kMax : value * 10 + (text[pos] - '0');
    ++count;
  }
  return pos - start;
}

std::string not_a_duration(std::string_view text) {
  return "'" + std::string(text) + "' is not a duration; write e.g. " +
         std::string(kDurationExamples);
}

}  // namespace

std::optional<Millis> parse_duration(std::string_view text, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<Millis> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  if (text == "0") return 0;
  if (!text.empty() && text[0] == '-') {
    return fail("'" + std::string(text) + "' is negative; a duration is 0 or more");
  }
  bool all_digits = !text.empty();
  for (char c : text) all_digits = all_digits && is_digit(c);
  if (all_digits) {
    return fail("'" + std::string(text) + "' has no unit; write " + std::string(text) + "s, " +
                std::string(text) + "m or " + std::string(text) + "ms");
  }
  Millis total = 0;
  std::size_t pos = 0;
  if (text.empty()) return fail(not_a_duration(text));
  while (pos < text.size()) {
    Millis whole = 0, fraction = 0;
    int whole_digits = 0, fraction_digits = 0;
    pos += read_digits(text, pos, whole, whole_digits);
    if (pos < text.size() && text[pos] == '.') {
      pos += 1 + read_digits(text, pos + 1, fraction, fraction_digits);
      if (fraction_digits == 0 || fraction_digits > 9) return fail(not_a_duration(text));
    }
    if (whole_digits == 0 && fraction_digits == 0) return fail(not_a_duration(text));
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(pos).starts_with(u.suffix)) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) return fail(not_a_duration(text));
    pos += unit->suffix.size();
    // A unit must end the part: "5min" is not "5m" + "in".
    if (pos < text.size() && !is_digit(text[pos]) && text[pos] != '.') {
      return fail(not_a_duration(text));
    }
    Millis scale = 1;
    for (int i = 0; i < fraction_digits; ++i) scale *= 10;
    // fraction / scale of a unit, exact in milliseconds or refused.
    Millis fraction_ms = fraction * unit->ms / scale;
    if (fraction_ms * scale != fraction * unit->ms) {
      return fail("'" + std::string(text) + "' is finer than a millisecond");
    }
    if (whole > (kMax - fraction_ms) / unit->ms)
      return fail("'" + std::string(text) + "' is too long");
    Millis part = whole * unit->ms + fraction_ms;
    if (total > kMax - part) return fail("'" + std::string(text) + "' is too long");
    total += part;
  }
  return total;
}

std::string format_duration(Millis ms) {
  if (ms < 1000) return std::to_string(ms) + "ms";
  struct Part {
    Millis size;
    const char* name;
  };
  static constexpr std::array<Part, 4> kParts{{
      {86'400'000, "d"},
      {3'600'000, "h"},
      {60'000, "m"},
      {1000, "s"},
  }};
  std::size_t first = 0;
  while (ms < kParts[first].size) ++first;
  std::string out = std::to_string(ms / kParts[first].size) + kParts[first].name;
  if (first + 1 < kParts.size()) {
    Millis next = ms % kParts[first].size / kParts[first + 1].size;
    if (next != 0) out += std::to_string(next) + kParts[first + 1].name;
  }
  return out;
}

}  // namespace tenure
