#pragma once
// The ops of the wire contract (§3), declared once: each op's name, whether it mutates, whether
// it is for admins only, and the fields it defines. The client formats requests from this table,
// and the server parses, refuses, names and counts them by it. Adding an op means a row here,
// its request and result types, its engine call and its reply formatter.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace tenure::protocol {

// In the order of kOps.
enum class Op : std::uint8_t {
  acquire,
  renew,
  release,
  keepalive,
  check,
  get,
  list,
  history,
  revoke,
  watch,
  unwatch,
  stats,
  ping,
  backup,
};

// Every field a request may carry. The server names the first of them (in this order) that an
// op does not define, so the order is part of the wire's behaviour.
enum class Field : std::uint8_t {
  id,
  op,
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
  reason,
  from_revision,
  watch_id,
  dir,
};
inline constexpr std::size_t kFieldCount = static_cast<std::size_t>(Field::dir) + 1;

// A set of fields, a bit per Field.
using FieldSet = std::uint32_t;
static_assert(kFieldCount <= 32);

constexpr FieldSet field_set(std::initializer_list<Field> fields) {
  FieldSet set = 0;
  for (Field f : fields) set |= FieldSet{1} << static_cast<unsigned>(f);
  return set;
}

struct OpSpec {
  Op op;
  std::string_view name;
  // Changes leases or the ledger: refused on WebSocket without credentials (§7), and audited
  // when the engine answers it.
  bool mutates;
  bool admin_only;  // refused as forbidden to other principals
  FieldSet fields;  // besides id and op, which every op takes
};

// The contract's §3, op by op.
inline constexpr std::array kOps = [] {
  using enum Field;
  return std::array{
      OpSpec{Op::acquire, "acquire", true, false,
             field_set(
                 {key, owner, ttl_ms, open_ended, wait_ms, release_on_disconnect, lock_delay_ms})},
      OpSpec{Op::renew, "renew", true, false, field_set({key, owner, ttl_ms, token})},
      OpSpec{Op::release, "release", true, false, field_set({key, owner, token})},
      OpSpec{Op::keepalive, "keepalive", true, false, field_set({owner, ttl_ms})},
      OpSpec{Op::check, "check", false, false, field_set({key, token, owner})},
      OpSpec{Op::get, "get", false, false, field_set({key})},
      OpSpec{Op::list, "list", false, false, field_set({prefix, limit, after})},
      OpSpec{Op::history, "history", false, false, field_set({key, limit, before_token})},
      OpSpec{Op::revoke, "revoke", true, false, field_set({key, reason})},
      OpSpec{Op::watch, "watch", false, false, field_set({prefix, key, from_revision})},
      OpSpec{Op::unwatch, "unwatch", false, false, field_set({watch_id})},
      OpSpec{Op::stats, "stats", false, false, field_set({})},
      OpSpec{Op::ping, "ping", false, false, field_set({})},
      OpSpec{Op::backup, "backup", true, true, field_set({dir})},
  };
}();
inline constexpr std::size_t kOpCount = kOps.size();

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < kOps.size(); ++i) {
    if (static_cast<std::size_t>(kOps[i].op) != i) return false;
  }
  return true;
}
static_assert(table_in_enum_order(), "kOps lists the ops in the order of Op");

// The ops the engine answers come first; the rest are a connection's own (watches, stats, ping,
// backup). The engine counts its ops by these indexes.
inline constexpr std::size_t kEngineOpCount = static_cast<std::size_t>(Op::revoke) + 1;

constexpr const OpSpec& spec(Op op) { return kOps[static_cast<std::size_t>(op)]; }
constexpr std::string_view to_string(Op op) { return spec(op).name; }

// Whether `op` defines `field` (besides id and op).
constexpr bool defines(Op op, Field field) { return (spec(op).fields & field_set({field})) != 0; }

std::string_view to_string(Field field);
std::optional<Op> parse_op(std::string_view name);
std::optional<Field> parse_field(std::string_view name);

}  // namespace tenure::protocol
