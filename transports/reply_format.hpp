#pragma once
// Replies and unsolicited messages (§3) as JSON objects appended to `out`, without framing.
// `id` is the raw JSON of the request's id, echoed as sent, or empty for none.
#include <cstdint>
#include <string>
#include <string_view>

#include "actors/engine.hpp"
#include "actors/requests.hpp"

namespace tenure {

void format_error(std::string& out, std::string_view id, const Error& error);

void format_acquire(std::string& out, std::string_view id, const AcquireResult& result);
void format_renew(std::string& out, std::string_view id, const HolderResult& result);
void format_release(std::string& out, std::string_view id, const HolderResult& result);
void format_revoke(std::string& out, std::string_view id, const HolderResult& result);
void format_check(std::string& out, std::string_view id, const HolderResult& result);
void format_get(std::string& out, std::string_view id, const GetResult& result);
void format_keepalive(std::string& out, std::string_view id, const KeepaliveResult& result);
void format_list(std::string& out, std::string_view id, const ListResult& result);
void format_history(std::string& out, std::string_view id, const HistoryResult& result);
void format_pong(std::string& out, std::string_view id);

// What the transport adds to the engine's numbers in a stats reply.
struct ServerStats {
  std::string_view version;
  Millis uptime_ms = 0;
  std::uint64_t connections = 0;
  std::uint64_t watchers = 0;
};
void format_stats(std::string& out, std::string_view id, const ServerStats& server,
                  const EngineStats& engine);

// Told to the connection that acquired a lease when it expires or is revoked.
void format_lost(std::string& out, const Event& event);

}  // namespace tenure
