#pragma once
// Durations as people type and read them.
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"

namespace tenure {

// "250ms", "30s", "15m", "24h", or a bare integer of milliseconds. Empty when malformed, negative
// or too large to represent.
std::optional<Millis> parse_duration(std::string_view text);

// The two largest units, truncated: "850ms", "45s", "14m59s", "2h5m", "3d4h", "15m".
std::string format_duration(Millis ms);

}  // namespace tenure
