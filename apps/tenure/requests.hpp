#pragma once
// The request lines of the contract (§3), one builder per op. Optional fields left empty are
// omitted, so the server applies its defaults.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "apps/tenure/client.hpp"
#include "core/clock.hpp"

namespace tenure::cli {

using Token = std::uint64_t;

struct AcquireParams {
  std::string key;
  std::string owner;
  std::optional<Millis> ttl;
  bool open_ended = false;
  std::optional<Millis> wait;
  std::optional<Millis> lock_delay;
  bool release_on_disconnect = false;
};

std::string acquire_request(RequestId id, const AcquireParams& p);
std::string renew_request(RequestId id, std::string_view key, std::string_view owner,
                          std::optional<Millis> ttl, std::optional<Token> token);
std::string release_request(RequestId id, std::string_view key, std::string_view owner,
                            std::optional<Token> token);
std::string keepalive_request(RequestId id, std::string_view owner, std::optional<Millis> ttl);
std::string check_request(RequestId id, std::string_view key, Token token,
                          const std::optional<std::string>& owner);
std::string get_request(RequestId id, std::string_view key);
std::string revoke_request(RequestId id, std::string_view key,
                           const std::optional<std::string>& reason);
std::string watch_request(RequestId id, const std::optional<std::string>& prefix,
                          const std::optional<std::string>& key,
                          std::optional<std::uint64_t> from_revision);
// Ops with no fields: stats, ping.
std::string bare_request(RequestId id, std::string_view op);

// Paged reads take `cursor`, the previous page's `next` as raw JSON, so one pager serves both.
std::string list_request(RequestId id, const std::optional<std::string>& prefix,
                         std::optional<std::uint64_t> limit,
                         const std::optional<std::string>& cursor);
std::string history_request(RequestId id, std::string_view key, std::optional<std::uint64_t> limit,
                            const std::optional<std::string>& cursor);

}  // namespace tenure::cli
