#pragma once
// What one client thread counted; merged into the run's totals at the end.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "bench/load/expiry_ledger.hpp"
#include "bench/load/histogram.hpp"

namespace tenure::bench {

// Expiry: the deliveries of leases' expiry to one kind of listener (the acquiring connections'
// `lost` events, or the watchers' `expired` events).
struct Deliveries {
  Histogram lateness;           // received minus the lease's expires_at, ms
  std::uint64_t delivered = 0;  // first deliveries
  std::uint64_t duplicates = 0;
  std::uint64_t unexpected = 0;

  void count(const ExpiryLedger::Delivery& d, std::int64_t received_ms) {
    switch (d.arrival) {
      case ExpiryLedger::Arrival::first:
        ++delivered;
        // Deadlines and receive times have millisecond precision; early is on time.
        lateness.record(
            static_cast<std::uint64_t>(std::max<std::int64_t>(0, received_ms - d.expires_at_ms)));
        break;
      case ExpiryLedger::Arrival::duplicate:
        ++duplicates;
        break;
      case ExpiryLedger::Arrival::unexpected:
        ++unexpected;
        break;
    }
  }
  void merge(const Deliveries& other) {
    lateness.merge(other.lateness);
    delivered += other.delivered;
    duplicates += other.duplicates;
    unexpected += other.unexpected;
  }
};

struct Stats {
  Histogram latency;    // every measured operation, µs
  Histogram lock_wait;  // first acquire attempt of a cycle to `acquired` (retries, queueing), µs
  std::uint64_t ops = 0;
  std::uint64_t cycles = 0;  // completed lock cycles (acquired, then released or left to expire)
  std::uint64_t acquired = 0;
  std::uint64_t held = 0;
  std::uint64_t renewed = 0;
  std::uint64_t released = 0;
  std::uint64_t not_holder = 0;
  std::uint64_t leases_to_expire = 0;  // expiry: leases acquired, whose expiry is awaited
  std::uint64_t expiry_skipped = 0;    // expiry: keys whose planned deadline was too near
  Deliveries lost;                     // expiry: `lost` pushed to the acquiring connection
  Deliveries watched;                  // expiry: `expired` events at the watchers
  std::uint64_t watch_lags = 0;        // expiry: watches that lagged (and were resumed)
  // expiry, --probe-interval: the probe's round trips during the storm, µs from when each was due
  Histogram probe_ping;
  Histogram probe_acquire;
  Histogram probe_release;  // from when it was sent, right after its acquire
  std::map<std::string, std::uint64_t> errors;

  void merge(const Stats& other) {
    latency.merge(other.latency);
    lock_wait.merge(other.lock_wait);
    ops += other.ops;
    cycles += other.cycles;
    acquired += other.acquired;
    held += other.held;
    renewed += other.renewed;
    released += other.released;
    not_holder += other.not_holder;
    leases_to_expire += other.leases_to_expire;
    expiry_skipped += other.expiry_skipped;
    lost.merge(other.lost);
    watched.merge(other.watched);
    watch_lags += other.watch_lags;
    probe_ping.merge(other.probe_ping);
    probe_acquire.merge(other.probe_acquire);
    probe_release.merge(other.probe_release);
    for (const auto& [kind, n] : other.errors) errors[kind] += n;
  }
};

}  // namespace tenure::bench
