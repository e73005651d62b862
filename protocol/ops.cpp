#include "protocol/ops.hpp"

#include <array>
#include <initializer_list>

namespace tenure::protocol {
namespace {

using F = Field;

struct OpSpec {
  Op op;
  std::string_view name;
  std::initializer_list<Field> fields;
};

// The contract's §3, op by op.
const std::array<OpSpec, kOpCount> kOps{{
    {Op::acquire,
     "acquire",
     {F::key, F::owner, F::ttl_ms, F::open_ended, F::wait_ms, F::release_on_disconnect,
      F::lock_delay_ms}},
    {Op::renew, "renew", {F::key, F::owner, F::ttl_ms, F::token}},
    {Op::keepalive, "keepalive", {F::owner, F::ttl_ms}},
    {Op::release, "release", {F::key, F::owner, F::token}},
    {Op::check, "check", {F::key, F::token, F::owner}},
    {Op::get, "get", {F::key}},
    {Op::list, "list", {F::prefix, F::limit, F::after}},
    {Op::history, "history", {F::key, F::limit, F::before_token}},
    {Op::watch, "watch", {F::prefix, F::key, F::from_revision}},
    {Op::unwatch, "unwatch", {F::watch_id}},
    {Op::revoke, "revoke", {F::key, F::reason}},
    {Op::stats, "stats", {}},
    {Op::ping, "ping", {}},
}};

constexpr std::array<std::string_view, kFieldCount> kFieldNames{
    "key",           "owner",    "ttl_ms", "open_ended", "wait_ms", "release_on_disconnect",
    "lock_delay_ms", "token",    "prefix", "limit",      "after",   "before_token",
    "from_revision", "watch_id", "reason"};

}  // namespace

std::string_view to_string(Op op) { return kOps[static_cast<std::size_t>(op)].name; }

std::string_view to_string(Field field) { return kFieldNames[static_cast<std::size_t>(field)]; }

std::optional<Op> parse_op(std::string_view name) {
  for (const auto& spec : kOps) {
    if (spec.name == name) return spec.op;
  }
  return std::nullopt;
}

bool defines(Op op, Field field) {
  for (Field f : kOps[static_cast<std::size_t>(op)].fields) {
    if (f == field) return true;
  }
  return false;
}

}  // namespace tenure::protocol
