#pragma once
// The options of tenure::client calls: aggregates for designated initializers,
// `client.acquire_lease("pr/1051", {.ttl = 15min, .wait = 30s})`.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tenure::client {

using std::chrono::milliseconds;

struct ClientOptions {
  // The socket; else $TENURE_SOCKET; else the per-user default, else the system service's
  // (resolve_socket_path, as the CLI resolves it).
  std::optional<std::string> socket{};
  // Or a WebSocket: "ws://127.0.0.1:7420/v1/ws", with the bearer token of <data-dir>/ws.token
  // for mutations (without it: read-only ops; mutations fail `unauthenticated`).
  std::optional<std::string> url{};
  std::optional<std::string> token{};
  // Or several daemons to fail over between (the nodes of a cluster, docs/cluster.md): socket
  // paths and ws:// URLs (`token` goes to every URL). Connecting tries them in order; a broken
  // connection, or a call without a reply within `timeout`, sends the next call to the next one.
  // Calls in flight then fail (`disconnected`, `timeout`) and are not repeated; leases renew and
  // watches resume through whichever endpoint answers. Not with `socket` or `url`.
  std::vector<std::string> endpoints{};
  milliseconds timeout{10000};         // every call's, plus its wait if it waits
  std::optional<std::string> owner{};  // the calls' default owner; else a fresh unique one
};

struct AcquireOptions {
  std::optional<std::string> owner{};
  std::optional<milliseconds> ttl{};  // empty: the server's default (15 min)
  std::optional<milliseconds> wait{};
  bool open_ended = false;
  bool release_on_disconnect = false;
  std::optional<milliseconds> lock_delay{};
};

struct RenewOptions {
  std::optional<std::string> owner{};
  std::optional<milliseconds> ttl{};
  std::optional<std::uint64_t> token{};
};

struct ReleaseOptions {
  std::optional<std::string> owner{};
  std::optional<std::uint64_t> token{};
};

struct ListOptions {
  std::optional<std::string> prefix{};
  std::optional<std::uint64_t> limit{};
  std::optional<std::string> after{};
};

struct HistoryOptions {
  std::optional<std::uint64_t> limit{};
  std::optional<std::uint64_t> before_token{};
};

struct WatchOptions {
  std::optional<std::string> prefix{};  // or key, not both; neither: every key
  std::optional<std::string> key{};
  std::optional<std::uint64_t> from_revision{};  // replay from here; empty: live events only
  // How long resuming may go on failing (no endpoint answering) before the watch ends with the
  // failure (`cannot_connect`, `disconnected`, …); empty: it never gives up.
  std::optional<milliseconds> resume_for{};
};

struct LeaseOptions {
  std::optional<milliseconds> ttl{};   // empty: the server's default
  std::optional<milliseconds> wait{};  // how long to wait for the key; empty: not at all
  std::optional<std::string> owner{};  // empty: a fresh unique owner for this lease
  bool release_on_disconnect = false;
  std::optional<milliseconds> lock_delay{};
  // Called once, on a thread of its own, when the lease is lost (with the reason: expired,
  // revoked, disconnected, or unreachable: …). Never after the lease was released.
  std::function<void(std::string_view reason)> on_lost{};
};

}  // namespace tenure::client
