#pragma once
// Reading the contract's timestamps and showing them in local, relative form.
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"
#include "protocol/message.hpp"

namespace tenure::cli {

using protocol::parse_time;

// The wall clock in Unix ms: replies carry wall-clock times, so that is what they compare with.
Millis wall_now();

// Local time: "15:04:05" when t is today, else "2026-11-30 15:04:05".
std::string local_time(Millis t, Millis now);

// "in 14m59s" or "3m ago".
std::string relative_time(Millis t, Millis now);

// "expires in 14m59s (15:04:05)", "expired 2s ago (15:04:05)", or "open-ended" when there is no
// deadline.
std::string describe_expiry(std::optional<Millis> expires_at, Millis now);

}  // namespace tenure::cli
