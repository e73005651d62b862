#pragma once
// Replies and events as values, read from a parsed Message. Times are Unix ms; an empty
// expires_at is an open-ended lease.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "protocol/message.hpp"
#include "protocol/ops.hpp"
#include "protocol/result.hpp"

namespace tenure::protocol {

struct LeaseInfo {
  std::string key;
  std::string owner;
  std::uint64_t token = 0;
  std::optional<Millis> acquired_at;
  std::optional<Millis> expires_at;  // empty: open-ended
  std::optional<std::int64_t> ttl_ms;
};

struct Acquired : LeaseInfo {
  bool fresh = true;  // false: the owner already held it (idempotent acquire)
  std::uint64_t revision = 0;
};

struct Renewed : LeaseInfo {
  std::uint64_t revision = 0;
};

struct Released {
  std::string key;
  std::optional<std::uint64_t> token;  // empty: nothing was live (idempotent success)
  std::optional<std::uint64_t> revision;
};

struct KeepAlive {
  std::uint64_t count = 0;
  std::uint64_t revision = 0;
};

struct Valid {
  std::optional<Millis> expires_at;  // the fencing check passed; empty if open-ended
};

struct Waiter {
  std::string owner;
  std::optional<Millis> since;
};

struct KeyInfo {
  std::string key;
  std::optional<LeaseInfo> lease;
  std::uint64_t last_token = 0;
  std::uint64_t waiters = 0;
  std::vector<Waiter> waiting;
  std::optional<Millis> lock_delay_until;
};

struct LeasePage {
  std::vector<LeaseInfo> leases;
  std::optional<std::string> next;  // pass as `after` for the following page
};

struct TenureRecord {
  std::uint64_t token = 0;
  std::string owner;
  std::optional<Millis> acquired_at;
  std::optional<Millis> ended_at;
  std::optional<std::string> end;  // released, expired, revoked; empty while live
  std::optional<std::string> revoked_by;
  std::optional<std::string> reason;
};

struct HistoryPage {
  std::vector<TenureRecord> tenures;
  std::optional<std::uint64_t> next;  // pass as `before_token` for the following page
};

struct Revoked {
  std::string key;
  std::uint64_t token = 0;
  std::uint64_t revision = 0;
};

struct Stats {
  std::string version;
  std::uint64_t uptime_ms = 0, revision = 0, live_leases = 0, keys = 0, connections = 0,
                watchers = 0;
  std::map<std::string, std::uint64_t> ops;
};

struct Watching {
  std::uint64_t watch_id = 0;
  std::uint64_t revision = 0;
  std::string line;  // the reply as the server sent it
};

// A watch event: type is acquired, renewed, released, expired or revoked.
struct Event {
  std::string type;
  std::uint64_t watch_id = 0;
  std::uint64_t revision = 0;
  std::string key;
  std::string owner;
  std::uint64_t token = 0;
  std::optional<Millis> at;
  std::optional<Millis> expires_at;
  std::optional<std::string> by;
  std::optional<std::string> reason;
  std::string line;  // the event as the server sent it
};

// The `lost` notice sent to the connection that acquired a lease.
struct Lost {
  std::string key;
  std::uint64_t token = 0;
  std::string reason;  // expired, revoked
};

// The failure a reply reports: an error, held, or not_holder. Empty when it reports success.
std::optional<Failure> reply_failure(const Message& reply);

// Typed readers of a successful reply of each op (failures as reply_failure says).
Result<Acquired> read_acquired(const Message& reply);
Result<Renewed> read_renewed(const Message& reply);
Result<Released> read_released(const Message& reply);
Result<KeepAlive> read_keepalive(const Message& reply);
Result<Valid> read_valid(const Message& reply);
Result<KeyInfo> read_key_info(const Message& reply);
Result<LeasePage> read_lease_page(const Message& reply);
Result<HistoryPage> read_history_page(const Message& reply);
Result<Revoked> read_revoked(const Message& reply);
Result<Stats> read_stats(const Message& reply);
Result<Done> read_pong(const Message& reply);
Result<Watching> read_watching(const Message& reply);
Result<Done> read_unwatched(const Message& reply);

std::optional<LeaseInfo> read_lease(Fields fields);
std::optional<Event> read_event(const Message& event);
std::optional<Lost> read_lost(const Message& event);

}  // namespace tenure::protocol
