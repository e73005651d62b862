#pragma once
// Replies and unsolicited messages (§3, §5) as JSON objects appended to `out`, without framing.
// `id` is the raw JSON of the request's id, echoed as sent, or empty for none. Each reply
// formatter returns what the reply said, for the metrics.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/engine.hpp"
#include "actors/requests.hpp"
#include "core/cluster_view.hpp"

namespace tenure {

enum class ReplyStatus : std::uint8_t {
  acquired,
  held,
  renewed,
  released,
  revoked,
  valid,
  not_holder,
  ok,
  pong,
  watching,
  unwatched,
  error,
  count
};

std::string_view to_string(ReplyStatus status);

struct ReplyOutcome {
  ReplyOutcome(ReplyStatus said) : status(said) {}  // NOLINT(google-explicit-constructor)
  explicit ReplyOutcome(errc code) : status(ReplyStatus::error), error(code) {}

  ReplyStatus status;
  std::optional<errc> error;  // the code of an error reply
};

ReplyOutcome format_error(std::string& out, std::string_view id, const Error& error);

ReplyOutcome format_acquire(std::string& out, std::string_view id, const AcquireResult& result);
ReplyOutcome format_renew(std::string& out, std::string_view id, const HolderResult& result);
ReplyOutcome format_release(std::string& out, std::string_view id, const HolderResult& result);
ReplyOutcome format_revoke(std::string& out, std::string_view id, const HolderResult& result);
ReplyOutcome format_check(std::string& out, std::string_view id, const HolderResult& result);
ReplyOutcome format_get(std::string& out, std::string_view id, const GetResult& result);
ReplyOutcome format_keepalive(std::string& out, std::string_view id, const KeepaliveResult& result);
ReplyOutcome format_list(std::string& out, std::string_view id, const ListResult& result);
ReplyOutcome format_history(std::string& out, std::string_view id, const HistoryResult& result);
ReplyOutcome format_pong(std::string& out, std::string_view id);
ReplyOutcome format_backup(std::string& out, std::string_view id, const BackupResult& result);
ReplyOutcome format_watching(std::string& out, std::string_view id, std::uint64_t watch_id,
                             Revision current);
ReplyOutcome format_unwatched(std::string& out, std::string_view id, std::uint64_t watch_id);

// What the transport adds to the engine's numbers in a stats reply.
struct ServerStats {
  std::string_view version;
  Millis uptime_ms = 0;
  std::uint64_t connections = 0;
  std::uint64_t watchers = 0;
  const ClusterView* cluster = nullptr;  // cluster mode only
};
ReplyOutcome format_stats(std::string& out, std::string_view id, const ServerStats& server,
                          const EngineStats& engine);

// Told to the connection that acquired a lease when it expires or is revoked.
void format_lost(std::string& out, const Event& event);

// The last message to a client that took none of its output for the write timeout: how many
// messages (replies, `lost` notices, events) it will not get. See docs/protocol.md.
void format_closing(std::string& out, std::size_t undelivered, std::int64_t timeout_ms);

// A watch's event (§5), and the two messages that end a watch from the server's side.
void format_event(std::string& out, std::uint64_t watch_id, const Event& event);
void format_lagged(std::string& out, std::uint64_t watch_id, Revision resume_from);
void format_compacted(std::string& out, std::uint64_t watch_id, Revision oldest);
void format_watch_failed(std::string& out, std::uint64_t watch_id, Revision resume_from,
                         const std::string& message);

}  // namespace tenure
