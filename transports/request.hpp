#pragma once
// A request as read off the wire (§3): one typed body per op. Ops the engine answers carry the
// engine's own request types; the rest (watch, unwatch, stats, ping) are the transport's.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "actors/requests.hpp"
#include "protocol/ops.hpp"

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

// One alternative per op, in the order of protocol::Op (the parser checks each against its op's
// builder at compile time).
using RequestBody =
    std::variant<AcquireRequest, RenewRequest, ReleaseRequest, KeepaliveRequest, CheckRequest,
                 GetRequest, ListRequest, HistoryRequest, RevokeRequest, WatchRequest,
                 UnwatchRequest, StatsRequest, PingRequest, BackupRequest>;
static_assert(std::variant_size_v<RequestBody> == protocol::kOpCount);

inline protocol::Op op_of(const RequestBody& body) {
  return static_cast<protocol::Op>(body.index());
}

// The op of a request type: its place among RequestBody's alternatives.
template <typename Request, typename Body = RequestBody>
inline constexpr protocol::Op request_op = protocol::Op{};
template <typename Request, typename... Requests>
inline constexpr protocol::Op request_op<Request, std::variant<Requests...>> = [] {
  std::size_t index = 0;
  (void)((std::is_same_v<Request, Requests> ? false : (++index, true)) && ...);
  return static_cast<protocol::Op>(index);
}();

// The outcome of parsing one line. `id` is the raw JSON text of the request's id, to be echoed
// verbatim; it is empty when the request had none (or it could not be read). It points into the
// parser, and lives until its next parse.
struct ParsedRequest {
  std::string_view id;
  std::variant<RequestBody, Error> body;
};

}  // namespace tenure
