#pragma once
// `tenure run`: hold a lease for exactly as long as a command runs.
#include <optional>
#include <string>
#include <vector>

#include "apps/tenure/session.hpp"

namespace tenure::cli {

struct RunArgs {
  std::string key;
  std::optional<std::string> owner;
  std::optional<Millis> ttl;
  std::optional<Millis> wait;
  Millis grace = 10'000;  // between SIGTERM and SIGKILL when the lease is lost
  std::vector<std::string> command;
};

// Acquires the key (release_on_disconnect, so a crashed tenure frees it at once), runs the command
// with TENURE_KEY, TENURE_TOKEN and TENURE_OWNER set, renews every third of the TTL on the same
// connection, and releases when the command exits. Returns the command's exit status (128+signal
// when killed), 4 when the key is held, or 5 when the lease was lost while the command ran: the
// command is then sent SIGTERM, and SIGKILL after the grace period.
int run_command(const Globals& g, const RunArgs& args);

}  // namespace tenure::cli
