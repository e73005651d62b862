#pragma once
// Wall-clock time in the server's terms: tenured reports deadlines as RFC 3339 UTC times with
// millisecond precision, so expiry lateness is measured on the same clock, in milliseconds.
#include <cstdint>
#include <string_view>

namespace tenure::bench {

std::int64_t wall_now_ms();
// "2026-11-30T03:55:33.123Z" as milliseconds since the epoch; 0 if it is not that shape.
std::int64_t parse_rfc3339_ms(std::string_view text);

}  // namespace tenure::bench
