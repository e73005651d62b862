#pragma once
// The ops of the wire contract (§3) and the fields each defines: one table, so that a request
// never carries a field its op does not define (v1.1 refuses those).
#include <cstdint>
#include <optional>
#include <string_view>

namespace tenure::protocol {

enum class Op : std::uint8_t {
  acquire,
  renew,
  keepalive,
  release,
  check,
  get,
  list,
  history,
  watch,
  unwatch,
  revoke,
  stats,
  ping,
};
inline constexpr std::size_t kOpCount = 13;

enum class Field : std::uint8_t {
  key,
  owner,
  ttl_ms,
  open_ended,
  wait_ms,
  release_on_disconnect,
  lock_delay_ms,
  token,
  prefix,
  limit,
  after,
  before_token,
  from_revision,
  watch_id,
  reason,
};
inline constexpr std::size_t kFieldCount = 15;

std::string_view to_string(Op op);
std::string_view to_string(Field field);
std::optional<Op> parse_op(std::string_view name);

// Whether `op` defines `field` (besides id and op).
bool defines(Op op, Field field);

}  // namespace tenure::protocol
