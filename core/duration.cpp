#include "core/duration.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>

namespace tenure {
namespace {

struct Unit {
  std::string_view suffix;
  Millis ms;
};

constexpr std::array<Unit, 5> kUnits{{
    {"ms", 1},
    {"s", 1000},
    {"m", 60'000},
    {"h", 3'600'000},
    {"", 1},  // a bare number is milliseconds
}};

}  // namespace

std::optional<Millis> parse_duration(std::string_view text) {
  // Unsigned, so that a sign is rejected rather than read.
  std::uint64_t count = 0;
  auto [rest, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (ec != std::errc()) return std::nullopt;
  std::string_view suffix(rest, static_cast<std::size_t>(text.data() + text.size() - rest));
  for (const Unit& unit : kUnits) {
    if (suffix != unit.suffix) continue;
    if (count > static_cast<std::uint64_t>(std::numeric_limits<Millis>::max() / unit.ms)) {
      return std::nullopt;
    }
    return static_cast<Millis>(count) * unit.ms;
  }
  return std::nullopt;
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
