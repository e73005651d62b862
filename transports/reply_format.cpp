#include "transports/reply_format.hpp"

#include <charconv>
#include <cstring>

#include "core/clock.hpp"
#include "core/json_writer.hpp"
#include "core/slot.hpp"
#include "protocol/ops.hpp"
#include "transports/lease_json.hpp"

namespace tenure {
namespace {

// The engine words its own refusals; this covers a forbidden status that comes without one.
const Error kForbidden{errc::forbidden, "the lease was acquired by another principal"};

JsonWriter& begin_reply(JsonWriter& w, std::string_view id, ReplyStatus status) {
  w.begin_object();
  if (!id.empty()) w.key("id").raw(id);
  return w.field("status", to_string(status));
}

// The shared shape of every refused renew, release, revoke and check.
ReplyOutcome format_not_holder(std::string& out, std::string_view id, const HolderResult& result) {
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::not_holder)
      .field("key", result.key)
      .field("reason", to_string(result.reason));
  if (result.lease) {
    w.field("holder", result.lease->owner).field("token", result.lease->token);
  } else {
    w.null_field("holder").null_field("token");
  }
  w.end_object();
  return ReplyStatus::not_holder;
}

// Handles what every holder operation shares: engine errors, forbidden and not_holder. The
// outcome when the reply is written.
std::optional<ReplyOutcome> format_holder_refusal(std::string& out, std::string_view id,
                                                  const HolderResult& result) {
  if (result.error) return format_error(out, id, *result.error);
  if (result.status == HolderStatus::forbidden) return format_error(out, id, kForbidden);
  if (result.status == HolderStatus::not_holder) return format_not_holder(out, id, result);
  return std::nullopt;
}

// Who revoked and why; null for what is not known (a revoke recorded before they were kept, a
// revoke without a reason).
void write_revocation(JsonWriter& w, std::string_view by_name, const Revocation& revocation,
                      std::string_view reason_name = "reason") {
  auto text_or_null = [&](std::string_view name, const std::string& text) {
    if (text.empty()) {
      w.null_field(name);
    } else {
      w.field(name, text);
    }
  };
  text_or_null(by_name, revocation.by);
  text_or_null(reason_name, revocation.reason);
}

// A `lost` notice or a watch event, written through a pointer into room for its longest form
// and then cut to size: one resize each way, where JsonWriter's appends (a capacity check and a
// call each, a scan of every name) were two thirds of an expiry's formatting.
class EventLine {
 public:
  EventLine(std::string& out, const Event& event) : out_(out) {
    const std::size_t at = out.size();
    out.resize(at + kFixed + json_string_bound(event.key.size()) +
               json_string_bound(event.owner.size()) +
               json_string_bound(event.revocation.by.size()) +
               json_string_bound(event.revocation.reason.size()));
    p_ = out.data() + at;
  }
  ~EventLine() { out_.resize(static_cast<std::size_t>(p_ - out_.data())); }
  EventLine(const EventLine&) = delete;
  EventLine& operator=(const EventLine&) = delete;

  EventLine& raw(std::string_view text) {
    std::memcpy(p_, text.data(), text.size());
    p_ += text.size();
    return *this;
  }
  // REQUIRES: `text` needs no escaping (our own names and times).
  EventLine& name(std::string_view text) { return raw("\"").raw(text).raw("\""); }
  EventLine& string(std::string_view text) {
    p_ = write_json_string(p_, text);
    return *this;
  }
  EventLine& text_or_null(std::string_view text) {
    return text.empty() ? raw("null") : string(text);
  }
  EventLine& number(std::uint64_t v) {
    p_ = std::to_chars(p_, p_ + kNumber, v).ptr;
    return *this;
  }
  EventLine& time(std::optional<Millis> t) { return t ? name(TimeText(*t).view()) : raw("null"); }

 private:
  static constexpr std::size_t kNumber = 20;  // digits of a 64-bit number at most
  // Everything but the four strings, at its longest: the names and punctuation (~110 bytes),
  // four numbers, two quoted times (TimeText holds 32), and a null for an empty `by`/`reason`.
  static constexpr std::size_t kFixed = 160 + 4 * kNumber + 2 * (32 + 2) + 2 * 4;

  std::string& out_;
  char* p_;
};

void format_held(JsonWriter& w, std::string_view id, const AcquireResult& result) {
  begin_reply(w, id, ReplyStatus::held).field("key", result.key);
  if (result.status == AcquireStatus::lock_delay) {
    w.field("reason", "lock_delay").field("retry_after_ms", result.retry_after_ms);
    w.null_field("holder").field("token", result.last_token).null_field("expires_at");
  } else if (result.lease) {
    w.field("holder", result.lease->owner).field("token", result.lease->token);
    write_time(w, "expires_at", result.lease->expires_at);
  } else {
    w.null_field("holder").field("token", result.last_token).null_field("expires_at");
  }
}

}  // namespace

std::string_view to_string(ReplyStatus status) {
  static constexpr std::string_view kNames[] = {"acquired", "held",     "renewed",    "released",
                                                "revoked",  "valid",    "not_holder", "ok",
                                                "pong",     "watching", "unwatched",  "error"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(ReplyStatus::count));
  return kNames[static_cast<std::size_t>(status)];
}

ReplyOutcome format_error(std::string& out, std::string_view id, const Error& error) {
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::error).field("error", to_string(error.code));
  w.field("message", error.message).end_object();
  return ReplyOutcome(error.code);
}

ReplyOutcome format_acquire(std::string& out, std::string_view id, const AcquireResult& result) {
  if (result.error) return format_error(out, id, *result.error);
  if (result.status == AcquireStatus::forbidden) return format_error(out, id, kForbidden);
  JsonWriter w(out);
  if (result.status == AcquireStatus::acquired && result.lease) {
    begin_reply(w, id, ReplyStatus::acquired).field("fresh", result.fresh);
    write_lease_fields(w, result.key, *result.lease);
    w.field("revision", result.revision).end_object();
    return ReplyStatus::acquired;
  }
  format_held(w, id, result);
  w.end_object();
  return ReplyStatus::held;
}

ReplyOutcome format_renew(std::string& out, std::string_view id, const HolderResult& result) {
  if (auto refused = format_holder_refusal(out, id, result)) return *refused;
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::renewed);
  if (result.lease) write_lease_fields(w, result.key, *result.lease);
  w.field("revision", result.revision).end_object();
  return ReplyStatus::renewed;
}

ReplyOutcome format_release(std::string& out, std::string_view id, const HolderResult& result) {
  if (auto refused = format_holder_refusal(out, id, result)) return *refused;
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::released).field("key", result.key).field("token", result.token);
  // An idempotent release changed nothing, so it has no revision to report.
  if (result.status == HolderStatus::ok) w.field("revision", result.revision);
  w.end_object();
  return ReplyStatus::released;
}

ReplyOutcome format_revoke(std::string& out, std::string_view id, const HolderResult& result) {
  if (auto refused = format_holder_refusal(out, id, result)) return *refused;
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::revoked).field("key", result.key).field("token", result.token);
  w.field("revision", result.revision).end_object();
  return ReplyStatus::revoked;
}

ReplyOutcome format_check(std::string& out, std::string_view id, const HolderResult& result) {
  if (auto refused = format_holder_refusal(out, id, result)) return *refused;
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::valid);
  write_time(w, "expires_at", result.lease ? result.lease->expires_at : std::nullopt);
  w.end_object();
  return ReplyStatus::valid;
}

ReplyOutcome format_get(std::string& out, std::string_view id, const GetResult& result) {
  if (result.error) return format_error(out, id, *result.error);
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::ok).field("key", result.key);
  write_lease(w, "lease", result.key, result.lease);
  w.field("last_token", result.last_token).field("waiters", result.waiters);
  w.key("waiting").begin_array();
  for (const QueuedWaiter& waiter : result.waiting) {
    w.begin_object().field("owner", waiter.owner);
    write_time(w, "since", waiter.since);
    w.end_object();
  }
  w.end_array();
  if (result.lock_delay_until != 0) write_time(w, "lock_delay_until", result.lock_delay_until);
  w.end_object();
  return ReplyStatus::ok;
}

ReplyOutcome format_keepalive(std::string& out, std::string_view id,
                              const KeepaliveResult& result) {
  if (result.error) return format_error(out, id, *result.error);
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::renewed).field("count", result.count);
  w.field("revision", result.revision).end_object();
  return ReplyStatus::renewed;
}

ReplyOutcome format_list(std::string& out, std::string_view id, const ListResult& result) {
  if (result.error) return format_error(out, id, *result.error);
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::ok).key("leases").begin_array();
  for (const ListedLease& listed : result.leases) {
    w.begin_object();
    write_lease_fields(w, listed.key, listed.lease);
    w.end_object();
  }
  w.end_array().field("next", result.next).end_object();
  return ReplyStatus::ok;
}

ReplyOutcome format_history(std::string& out, std::string_view id, const HistoryResult& result) {
  if (result.error) return format_error(out, id, *result.error);
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::ok).key("tenures").begin_array();
  for (const TenureRecord& tenure : result.tenures) {
    w.begin_object().field("token", tenure.token).field("owner", tenure.owner);
    write_time(w, "acquired_at", tenure.acquired_at);
    write_time(w, "ended_at", tenure.ended_at);
    w.key("end");
    if (tenure.end) {
      w.value(to_string(*tenure.end));
    } else {
      w.null();
    }
    if (tenure.end == EndReason::revoked) write_revocation(w, "revoked_by", tenure.revocation);
    w.end_object();
  }
  w.end_array().field("next", result.next).end_object();
  return ReplyStatus::ok;
}

ReplyOutcome format_pong(std::string& out, std::string_view id) {
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::pong).end_object();
  return ReplyStatus::pong;
}

ReplyOutcome format_backup(std::string& out, std::string_view id, const BackupResult& result) {
  if (result.error) return format_error(out, id, *result.error);
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::ok).field("dir", result.dir);
  w.field("revision", result.revision).end_object();
  return ReplyStatus::ok;
}

ReplyOutcome format_watching(std::string& out, std::string_view id, std::uint64_t watch_id,
                             Revision current) {
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::watching).field("watch_id", watch_id);
  w.field("revision", current).end_object();
  return ReplyStatus::watching;
}

ReplyOutcome format_unwatched(std::string& out, std::string_view id, std::uint64_t watch_id) {
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::unwatched).field("watch_id", watch_id).end_object();
  return ReplyStatus::unwatched;
}

ReplyOutcome format_stats(std::string& out, std::string_view id, const ServerStats& server,
                          const EngineStats& engine) {
  JsonWriter w(out);
  begin_reply(w, id, ReplyStatus::ok).field("version", server.version);
  w.field("uptime_ms", server.uptime_ms);
  w.field("revision", engine.revision).field("live_leases", engine.live_leases);
  w.field("keys", engine.resident_keys).field("connections", server.connections);
  w.field("watchers", server.watchers).key("ops").begin_object();
  static_assert(std::tuple_size_v<decltype(engine.ops)> == protocol::kEngineOpCount);
  for (std::size_t op = 0; op < engine.ops.size(); ++op) {
    w.field(protocol::to_string(static_cast<protocol::Op>(op)), engine.ops[op]);
  }
  w.end_object();
  if (const ClusterView* cluster = server.cluster) {
    w.key("cluster").begin_object().field("node_id", cluster->node_id());
    w.key("nodes").begin_array();
    for (const ClusterView::Node& node : cluster->nodes()) {
      w.begin_object().field("id", node.id).field("peer", node.peer).end_object();
    }
    std::uint64_t owned = 0;
    for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
      owned += cluster->owner(slot) == cluster->node_id() ? 1 : 0;
    }
    w.end_array().field("slots_owned", owned).end_object();
  }
  w.end_object();
  return ReplyStatus::ok;
}

void format_lost(std::string& out, const Event& event) {
  EventLine line(out, event);
  line.raw(R"({"event":"lost","key":)").string(event.key);
  line.raw(R"(,"token":)").number(event.token).raw(R"(,"reason":)").name(to_string(event.type));
  line.raw(R"(,"at":)").time(event.at);
  // `reason` already says why the lease was lost; the revoker's words go beside it.
  if (event.type == EventType::revoked) {
    line.raw(R"(,"by":)").text_or_null(event.revocation.by);
    line.raw(R"(,"revoke_reason":)").text_or_null(event.revocation.reason);
  }
  line.raw(R"(,"revision":)").number(event.revision).raw("}");
}

void format_event(std::string& out, std::uint64_t watch_id, const Event& event) {
  EventLine line(out, event);
  line.raw(R"({"event":)").name(to_string(event.type)).raw(R"(,"watch_id":)").number(watch_id);
  line.raw(R"(,"revision":)").number(event.revision).raw(R"(,"key":)").string(event.key);
  line.raw(R"(,"owner":)").string(event.owner).raw(R"(,"token":)").number(event.token);
  line.raw(R"(,"at":)").time(event.at).raw(R"(,"expires_at":)").time(event.expires_at);
  if (event.type == EventType::revoked) {
    line.raw(R"(,"by":)").text_or_null(event.revocation.by);
    line.raw(R"(,"reason":)").text_or_null(event.revocation.reason);
  }
  line.raw("}");
}

void format_lagged(std::string& out, std::uint64_t watch_id, Revision resume_from) {
  JsonWriter w(out);
  w.begin_object().field("event", "lagged").field("watch_id", watch_id);
  w.field("resume_from", resume_from).end_object();
}

void format_compacted(std::string& out, std::uint64_t watch_id, Revision oldest) {
  JsonWriter w(out);
  w.begin_object().field("event", "compacted").field("watch_id", watch_id);
  w.field("oldest_revision", oldest).end_object();
}

void format_watch_failed(std::string& out, std::uint64_t watch_id, Revision resume_from,
                         const std::string& message) {
  JsonWriter w(out);
  w.begin_object().field("event", "error").field("watch_id", watch_id);
  w.field("error", "unavailable").field("message", message);
  w.field("resume_from", resume_from).end_object();
}

void format_closing(std::string& out, std::size_t undelivered, std::int64_t timeout_ms) {
  JsonWriter w(out);
  w.begin_object().field("event", "closing").field("reason", "unread");
  w.field("undelivered", static_cast<std::uint64_t>(undelivered));
  w.field("message", "no output was taken for " + std::to_string(timeout_ms) +
                         " ms; the messages not yet written are dropped and the connection closed");
  w.end_object();
}

}  // namespace tenure
