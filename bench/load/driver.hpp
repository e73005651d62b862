#pragma once
// Runs the configured load: client threads, each with its own event loop and its share of the
// connections; every connection runs lock cycles either closed loop (--pipeline cycles in
// flight, each starting when the last ended) or open loop (--rate: cycles started on a fixed
// schedule whatever the replies do, timed from when they were due).
#include <cstdint>

#include "bench/load/config.hpp"
#include "bench/load/stats.hpp"

namespace tenure::bench {

struct RunResult {
  Stats stats;
  double seconds = 0;  // the measured window
  std::uint64_t checked = 0;
  std::uint64_t double_grants = 0;
  std::uint64_t token_regressions = 0;
  double acquire_seconds = 0;  // expiry: from the start to the last `acquired` reply
  // expiry: the storm, from its first deadline (or the last acquire, if later) until every expiry
  // was delivered, and the server's CPU time over it (--server-pid; < 0: not measured).
  double storm_seconds = 0;
  double server_cpu_seconds = -1;
};

RunResult run(const Config& config);

}  // namespace tenure::bench
