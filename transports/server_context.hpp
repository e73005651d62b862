#pragma once
// What the sessions of one server share; it outlives them all.
#include <cstddef>

#include "actors/engine.hpp"
#include "transports/session_registry.hpp"

namespace tenure {

struct SessionLimits {
  std::size_t max_frame = 64 * 1024;
  std::size_t max_inflight = 1024;  // unanswered requests before a session stops reading
  // Unwritten output above which a session closes: its client has stopped reading (§2).
  std::size_t max_output = 4 << 20;
};

struct ServerContext {
  Engine& engine;
  SessionLimits limits;
  Millis started_at = 0;
  SessionRegistry registry;
};

}  // namespace tenure
