#pragma once
// A request as read off the wire (§3): one typed body per op. Ops the engine answers carry the
// engine's own request types; the rest (watch, unwatch, stats, ping) are the transport's.
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
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
// Admin only: an online, consistent copy of the ledger in `dir`, an absolute path that does not
// exist yet, on the server's machine.
struct BackupRequest {
  std::string dir;
};
struct PingRequest {};

using RequestBody =
    std::variant<AcquireRequest, RenewRequest, ReleaseRequest, KeepaliveRequest, CheckRequest,
                 GetRequest, ListRequest, HistoryRequest, RevokeRequest, WatchRequest,
                 UnwatchRequest, StatsRequest, PingRequest, BackupRequest>;

// The ops in the order of RequestBody's alternatives, then the name under which requests that
// could not be parsed are counted.
inline constexpr std::string_view kOpNames[] = {
    "acquire", "renew", "release", "keepalive", "check", "get",    "list",   "history",
    "revoke",  "watch", "unwatch", "stats",     "ping",  "backup", "invalid"};
inline constexpr std::size_t kInvalidOp = std::variant_size_v<RequestBody>;
static_assert(std::size(kOpNames) == kInvalidOp + 1);

// Mutations change leases and so need credentials on WebSocket (§7); every other op only reads.
inline bool is_mutation(const RequestBody& body) {
  return std::holds_alternative<AcquireRequest>(body) ||
         std::holds_alternative<RenewRequest>(body) ||
         std::holds_alternative<ReleaseRequest>(body) ||
         std::holds_alternative<KeepaliveRequest>(body) ||
         std::holds_alternative<RevokeRequest>(body) || std::holds_alternative<BackupRequest>(body);
}

// The outcome of parsing one line. `id` is the raw JSON text of the request's id, to be echoed
// verbatim; it is empty when the request had none (or it could not be read).
struct ParsedRequest {
  std::string id;
  std::variant<RequestBody, Error> body;
};

}  // namespace tenure
