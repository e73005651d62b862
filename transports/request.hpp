#pragma once
// A request as read off the wire (§3): one typed body per op. Ops the engine answers carry the
// engine's own request types; the rest (watch, unwatch, stats, ping) are the transport's.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "actors/requests.hpp"

namespace tenure {

struct WatchRequest {
  std::optional<std::string> key;
  std::string prefix;
  std::optional<Revision> from_revision;
};

struct UnwatchRequest {
  std::uint64_t watch_id = 0;
};

struct StatsRequest {};
struct PingRequest {};

using RequestBody =
    std::variant<AcquireRequest, RenewRequest, ReleaseRequest, KeepaliveRequest, CheckRequest,
                 GetRequest, ListRequest, HistoryRequest, RevokeRequest, WatchRequest,
                 UnwatchRequest, StatsRequest, PingRequest>;

// The outcome of parsing one line. `id` is the raw JSON text of the request's id, to be echoed
// verbatim; it is empty when the request had none (or it could not be read).
struct ParsedRequest {
  std::string id;
  std::variant<RequestBody, Error> body;
};

}  // namespace tenure
