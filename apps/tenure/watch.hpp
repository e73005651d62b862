#pragma once
// `tenure watch`: a live feed of lease events (contract §5).
#include <cstdint>
#include <optional>
#include <string>

#include "apps/tenure/session.hpp"

namespace tenure::cli {

// Prints one line per event until interrupted, resuming by revision when the connection is lost
// (on the next socket, with several). Returns only on failure: the watch refused, no socket
// answering within the timeout, or a resume from a revision the ledger no longer keeps.
int watch_command(const Globals& g, const std::optional<std::string>& prefix,
                  const std::optional<std::string>& key, std::optional<std::uint64_t> from);

}  // namespace tenure::cli
