#pragma once
// `tenure run` and `tenure hold`: hold a key for as long as a command runs, or until told to stop
// (contract §9).
#include <optional>
#include <string>
#include <vector>

#include "apps/tenure/session.hpp"
#include "apps/tenure/take_lease.hpp"

namespace tenure::cli {

struct HoldArgs {
  std::string key;
  std::optional<std::string> owner_prefix;  // --owner; see unique_owner()
  std::optional<Millis> ttl;
  WaitLimit wait;  // default: wait as long as it takes
};

struct RunArgs : HoldArgs {
  Millis grace = 10'000;  // between SIGTERM and SIGKILL when the lease is lost
  std::vector<std::string> command;
};

// Takes a tenure of its own (a unique owner), runs the command with TENURE_KEY and TENURE_TOKEN
// set and TENURE_OWNER unset, renews every third of the TTL, and releases when the command exits.
// With one socket the lease is connection-bound (release_on_disconnect), so that a crashed tenure
// frees the key at once; with several (a cluster's nodes) it is not, and its renewals fail over to
// the next node that answers. Returns the command's exit status (128+signal when killed), 4 when
// the key stays held, or 5 when the lease was lost while the command ran: the command is then sent
// SIGTERM, and SIGKILL after the grace period.
int run_command(const Globals& g, const RunArgs& args);

// Takes a tenure as run does and holds it until SIGINT, SIGTERM or SIGHUP, or until stdin ends
// (like `etcdctl lock`); then releases it and returns 0. Returns 4 when the key stays held and 5
// when the lease is lost meanwhile.
int hold_command(const Globals& g, const HoldArgs& args);

}  // namespace tenure::cli
