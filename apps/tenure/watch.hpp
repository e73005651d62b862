#pragma once
// `tenure watch`: a live feed of lease events (contract §5).
#include <cstdint>
#include <optional>
#include <string>

#include "apps/tenure/session.hpp"

namespace tenure::cli {

// Prints one line per event until interrupted. Returns only on failure: an error reply, the
// connection closing, or the server cancelling the watch (lagged, compacted).
int watch_command(const Globals& g, const std::optional<std::string>& prefix,
                  const std::optional<std::string>& key, std::optional<std::uint64_t> from);

}  // namespace tenure::cli
