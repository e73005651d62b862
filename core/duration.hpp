#pragma once
// Durations as people type and read them.
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"

namespace tenure {

// Shown wherever a duration is asked for or refused.
inline constexpr std::string_view kDurationExamples = "250ms, 30s, 15m, 1h30m, 1.5s, 2d";

// One or more NUMBER UNIT parts added up: "250ms", "30s", "1h30m", "1.5s", "2d" (units ms, s, m,
// h, d; a NUMBER may have a fraction). "0" alone needs no unit; any other bare number is refused,
// since it cannot tell seconds from milliseconds. Empty when malformed, negative, finer than a
// millisecond or too large; then `error`, if given, says why with examples.
std::optional<Millis> parse_duration(std::string_view text, std::string* error = nullptr);

// The two largest units, truncated: "850ms", "45s", "14m59s", "2h5m", "3d4h", "15m".
std::string format_duration(Millis ms);

}  // namespace tenure
