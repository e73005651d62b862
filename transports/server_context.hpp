#pragma once
// What the sessions of one server share; it outlives them all.
#include <cstddef>

#include "actors/engine.hpp"
#include "transports/audit_log.hpp"
#include "transports/session_registry.hpp"
#include "transports/transport_metrics.hpp"

namespace tenure {

struct SessionLimits {
  std::size_t max_frame = 64 * 1024;
  std::size_t max_inflight = 1024;  // unanswered requests before a session stops reading
  // Unwritten output above which a session closes: its client has stopped reading (§2).
  std::size_t max_output = 4 << 20;
  // Events of one watch on their way to the client above which the watch lags (§5).
  std::size_t watch_queue = 10'000;
  std::size_t max_watches = 1024;  // watches per connection
};

struct ServerContext {
  Engine& engine;
  SessionLimits limits;
  Millis started_at = 0;
  SessionRegistry registry;
  TransportMetrics metrics;
  AuditLog* audit = nullptr;  // --audit-log, if given
};

}  // namespace tenure
