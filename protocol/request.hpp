#pragma once
// A request as a value, and its one line of JSON. Unset optionals (and false flags) are left out;
// a set field the op does not define is refused before anything is sent.
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/ops.hpp"

namespace tenure::protocol {

struct Request {
  Op op = Op::ping;
  std::optional<std::string> key{}, owner{}, prefix{}, after{}, reason{};
  std::optional<std::int64_t> ttl_ms{}, wait_ms{}, lock_delay_ms{};
  std::optional<std::uint64_t> token{}, limit{}, before_token{}, from_revision{}, watch_id{};
  bool open_ended = false;
  bool release_on_disconnect = false;
};

// The first field `request` sets that its op does not define, if any.
std::optional<Field> undefined_field(const Request& request);

// `{"id":ID,"op":…,…}` without the newline. REQUIRES: !undefined_field(request).
std::string format(std::uint64_t id, const Request& request);

}  // namespace tenure::protocol
