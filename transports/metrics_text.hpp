#pragma once
// /metrics (§7a): the engine's and the transports' numbers in the Prometheus text exposition
// format (version 0.0.4), every name prefixed `tenure_`.
#include <cstddef>
#include <string>

#include "transports/server_context.hpp"

namespace tenure {

// `http_connections`: open HTTP connections not upgraded to WebSocket.
std::string metrics_text(const ServerContext& context, std::size_t http_connections);

}  // namespace tenure
