#pragma once
// Human-readable renderings of replies and events: one line each where possible, times in local
// and relative form. Scripts use --json instead, so these may change.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/tenure/message.hpp"

namespace tenure::cli {

std::string describe_acquired(Fields reply);
std::string describe_renewed(Fields reply);
std::string describe_keepalive(Fields reply);
std::string describe_released(Fields reply);
std::string describe_revoked(Fields reply);
// check's reply names neither key nor token, so the caller supplies them.
std::string describe_valid(Fields reply, std::string_view key, std::uint64_t token);
std::string describe_get(Fields reply);
std::string describe_stats(Fields reply);
// held / not_holder.
std::string describe_conflict(Fields reply);
// A held key, from whatever told of it (a reply, or the client library's failure).
struct HeldKey {
  std::string key;
  std::string_view reason;  // the server's: "held_by_other", "lock_delay"
  std::optional<std::string_view> holder;
  std::optional<std::uint64_t> token;
  std::optional<Millis> retry_after_ms;
  std::optional<Millis> expires_at;
};
std::string describe_held(const HeldKey& held);
// status "error": "CODE: message".
std::string describe_error(Fields reply);
// A watch event (§5).
std::string describe_event(Fields event);

// Aligned columns, for list and history.
std::string lease_table(const std::vector<Fields>& leases);
std::string history_table(const std::vector<Fields>& tenures);

}  // namespace tenure::cli
