#include "protocol/ops.hpp"

namespace tenure::protocol {
namespace {

constexpr std::array<std::string_view, kFieldCount> kFieldNames{"id",
                                                                "op",
                                                                "key",
                                                                "owner",
                                                                "ttl_ms",
                                                                "open_ended",
                                                                "wait_ms",
                                                                "release_on_disconnect",
                                                                "lock_delay_ms",
                                                                "token",
                                                                "prefix",
                                                                "limit",
                                                                "after",
                                                                "before_token",
                                                                "reason",
                                                                "from_revision",
                                                                "watch_id",
                                                                "dir"};

}  // namespace

std::string_view to_string(Field field) { return kFieldNames[static_cast<std::size_t>(field)]; }

std::optional<Op> parse_op(std::string_view name) {
  for (const auto& spec : kOps) {
    if (spec.name == name) return spec.op;
  }
  return std::nullopt;
}

std::optional<Field> parse_field(std::string_view name) {
  for (std::size_t i = 0; i < kFieldNames.size(); ++i) {
    if (kFieldNames[i] == name) return static_cast<Field>(i);
  }
  return std::nullopt;
}

}  // namespace tenure::protocol
