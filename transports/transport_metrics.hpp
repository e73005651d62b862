#pragma once
// What the transports count for /metrics beyond the engine's own numbers: replies by op and
// status, error replies by code, and what became of watch events. Counted from any thread.
#include <array>
#include <atomic>
#include <cstdint>

#include "core/errc.hpp"
#include "protocol/ops.hpp"
#include "transports/reply_format.hpp"

namespace tenure {

inline constexpr std::size_t kErrcCount = static_cast<std::size_t>(errc::internal) + 1;

struct TransportMetrics {
  using Counter = std::atomic<std::uint64_t>;
  // One row per op, then one for requests that could not be parsed.
  static constexpr std::size_t kOps = protocol::kOpCount + 1;
  static constexpr std::size_t kInvalid = protocol::kOpCount;
  static constexpr std::size_t kStatuses = static_cast<std::size_t>(ReplyStatus::count);

  // `op`: a protocol::Op, or kInvalid.
  void count_reply(std::size_t op, const ReplyOutcome& outcome) {
    replies[op][static_cast<std::size_t>(outcome.status)].fetch_add(1, std::memory_order_relaxed);
    if (outcome.error) {
      errors[static_cast<std::size_t>(*outcome.error)].fetch_add(1, std::memory_order_relaxed);
    }
  }

  std::array<std::array<Counter, kStatuses>, kOps> replies{};
  std::array<Counter, kErrcCount> errors{};
  Counter events_sent{0};     // watch events queued to their connections
  Counter events_dropped{0};  // events that lagging watches did not get
  Counter watches_lagged{0};
  Counter http_connections{0};  // open HTTP connections not (yet) upgraded to WebSocket
};

}  // namespace tenure
