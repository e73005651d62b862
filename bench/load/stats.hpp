#pragma once
// What one client thread counted; merged into the run's totals at the end.
#include <cstdint>
#include <map>
#include <string>

#include "bench/load/histogram.hpp"

namespace tenure::bench {

struct Stats {
  Histogram latency;    // every measured operation, µs
  Histogram lock_wait;  // first acquire attempt of a cycle to `acquired` (retries, queueing), µs
  Histogram lateness;   // expiry: `lost` received minus the lease's expires_at, ms
  std::uint64_t ops = 0;
  std::uint64_t cycles = 0;  // completed lock cycles (acquired, then released or left to expire)
  std::uint64_t acquired = 0;
  std::uint64_t held = 0;
  std::uint64_t renewed = 0;
  std::uint64_t released = 0;
  std::uint64_t not_holder = 0;
  std::uint64_t leases_to_expire = 0;  // expiry: leases whose `lost` event is awaited
  std::uint64_t lost_events = 0;       // expiry: of those, how many arrived
  std::map<std::string, std::uint64_t> errors;

  void merge(const Stats& other) {
    latency.merge(other.latency);
    lock_wait.merge(other.lock_wait);
    lateness.merge(other.lateness);
    ops += other.ops;
    cycles += other.cycles;
    acquired += other.acquired;
    held += other.held;
    renewed += other.renewed;
    released += other.released;
    not_holder += other.not_holder;
    leases_to_expire += other.leases_to_expire;
    lost_events += other.lost_events;
    for (const auto& [kind, n] : other.errors) errors[kind] += n;
  }
};

}  // namespace tenure::bench
