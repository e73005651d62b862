#pragma once
// What the sessions of one server share; it outlives them all.
#include <atomic>
#include <chrono>
#include <cstddef>

#include "actors/engine.hpp"
#include "core/cluster_view.hpp"
#include "transports/audit_log.hpp"
#include "transports/session_registry.hpp"
#include "transports/transport_metrics.hpp"

namespace tenure {

class Router;

struct SessionLimits {
  std::size_t max_frame = 64 * 1024;
  // Unanswered requests, waiting acquires aside, before a session stops reading.
  std::size_t max_inflight = 1024;
  std::size_t max_waiting = 16384;  // waiting acquires per connection; more: too_many_requests
  // Replies owed (unwritten, or expected of requests in flight) above which a session stops
  // reading (§2).
  std::size_t max_output = 4 << 20;
  // A connection whose output has taken no byte for this long is closed: its client has stopped
  // reading.
  std::chrono::milliseconds write_timeout{30'000};
  // Events of one watch on their way to the client above which the watch lags (§5).
  std::size_t watch_queue = 10'000;
  std::size_t max_watches = 256;           // watches per connection
  std::size_t max_watches_total = 10'000;  // watches of all connections
};

struct ServerContext {
  Engine& engine;
  SessionLimits limits;
  Millis started_at = 0;
  SessionRegistry registry;
  TransportMetrics metrics;
  std::atomic<std::size_t> watches{0};   // of all connections, against max_watches_total
  AuditLog* audit = nullptr;             // --audit-log, if given
  Router* router = nullptr;              // cluster mode only: sends requests to their slot's owner
  const ClusterView* cluster = nullptr;  // cluster mode only: its nodes and slots, for stats
};

}  // namespace tenure
