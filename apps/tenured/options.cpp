#include "apps/tenured/options.hpp"

#include <grp.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "apps/version.hpp"
#include "core/default_paths.hpp"
#include "core/duration.hpp"
#include "storage/etcd_client.hpp"
#include "storage/membership.hpp"
#include "transports/listen_address.hpp"

namespace tenure {
namespace {

// A duration flag that writes straight into `target`.
CLI::Option* add_duration(CLI::App& app, const std::string& name, Millis& target, std::string help,
                          const std::string& shown_default) {
  return app
      .add_option_function<std::string>(
          name,
          [&target, name](const std::string& text) {
            std::string error;
            auto ms = parse_duration(text, &error);
            if (!ms) throw CLI::ValidationError(name, error);
            target = *ms;
          },
          help + " (e.g. " + std::string(kDurationExamples) + ")")
      ->default_str(shown_default);
}

// The listener must stay on loopback unless remote access was asked for (§7).
std::optional<std::string> listen_problem(const Options& o) {
  if (o.ws_listen == "off") return std::nullopt;
  std::string error;
  auto address = parse_listen_address(o.ws_listen, error);
  if (!address) return "--ws-listen must be HOST:PORT or off: " + error;
  if (!address->endpoint.address().is_loopback() && !o.ws_allow_remote) {
    return "--ws-listen " + o.ws_listen +
           " is not a loopback address; pass --ws-allow-remote to listen there anyway";
  }
  return std::nullopt;
}

// An origin as browsers send it: scheme://host[:port], nothing after.
std::optional<std::string> origin_problem(const std::string& origin) {
  auto scheme_end = origin.find("://");
  bool scheme_ok = scheme_end != std::string::npos && scheme_end > 0;
  bool rest_ok = scheme_ok && origin.size() > scheme_end + 3 &&
                 origin.find_first_of("/?# ", scheme_end + 3) == std::string::npos;
  if (rest_ok) return std::nullopt;
  return "--ws-allow-origin '" + origin + "' is not an origin such as https://example.com:8443";
}

// The octal mode of --socket-mode: it must let the server's user connect, and may open the socket
// to a group but never to every user.
std::optional<std::string> parse_socket_mode(const std::string& text, unsigned& mode) {
  std::size_t used = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(text, &used, 8);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value > 0777) {
    return "--socket-mode '" + text + "' is not an octal file mode such as 0600 or 0660";
  }
  if ((value & 0600) != 0600) {
    return "--socket-mode " + text + " must let the owner read and write (0600 at least)";
  }
  if ((value & 0002) != 0) {
    return "--socket-mode " + text +
           " would let every user on the machine connect; use 0660 with --socket-group";
  }
  mode = static_cast<unsigned>(value);
  return std::nullopt;
}

std::optional<std::string> parse_group(const std::string& flag, const std::string& name,
                                       std::optional<gid_t>& gid) {
  if (name.empty()) return std::nullopt;
  std::vector<char> buffer(16384);
  group entry{};
  group* found = nullptr;
  if (::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found) {
    return flag + " " + name + ": no such group";
  }
  gid = found->gr_gid;
  return std::nullopt;
}

// The shared socket's rules that need the final paths (§7): the data dir stays private, so a
// socket a group may use lives outside it.
std::optional<std::string> sharing_problem(const Options& o) {
  bool shared = (o.socket_mode & 0060) != 0;
  if (o.socket_group && !shared) {
    return "--socket-group needs a --socket-mode that lets the group connect, such as 0660";
  }
  auto relative = std::filesystem::path(o.socket).lexically_relative(o.data_dir);
  bool inside = !relative.empty() && *relative.begin() != "..";
  if (shared && inside) {
    return "a socket that a group may use must live outside the data dir, which stays private: "
           "pass --socket, e.g. --socket /run/tenure/tenured.sock";
  }
  return std::nullopt;
}

// Absolute, normalised, and without a trailing slash, so that the paths logged are the paths used.
std::string normalized(const std::string& path) {
  auto p = std::filesystem::absolute(path).lexically_normal();
  return (p.has_filename() ? p : p.parent_path()).string();
}

// Cluster mode's flags: all of them or none, each well formed.
std::optional<std::string> cluster_problem(Options& o, const std::string& endpoints,
                                           bool prefix_given, bool ttl_given) {
  if (o.cluster.empty()) {
    const char* stray = !endpoints.empty()       ? "--etcd-endpoints"
                        : !o.node_id.empty()     ? "--node-id"
                        : !o.peer_listen.empty() ? "--peer-listen"
                        : prefix_given           ? "--cluster-prefix"
                        : ttl_given              ? "--cluster-lease-ttl"
                                                 : nullptr;
    if (stray) return std::string(stray) + " goes with --cluster etcd";
    return std::nullopt;
  }
  std::string missing;
  using Required = std::pair<const char*, const std::string*>;
  for (auto [flag, value] :
       {Required{"--etcd-endpoints", &endpoints}, Required{"--node-id", &o.node_id},
        Required{"--peer-listen", &o.peer_listen}}) {
    if (value->empty()) missing += std::string(missing.empty() ? "" : ", ") + flag;
  }
  if (!missing.empty()) {
    return "--cluster etcd needs --etcd-endpoints, --node-id and --peer-listen; missing: " +
           missing;
  }
  if (auto status = storage::parse_endpoints(endpoints, o.etcd_endpoints); !status.ok()) {
    return "--etcd-endpoints: " + status.message();
  }
  if (!storage::valid_node_id(o.node_id)) {
    return "--node-id '" + o.node_id + "' must be 1 to 64 letters, digits, '.', '_' or '-'";
  }
  std::string error;
  auto peer = parse_listen_address(o.peer_listen, error);
  if (!peer) return "--peer-listen must be HOST:PORT: " + error;
  if (peer->endpoint.port() == 0 || peer->endpoint.address().is_unspecified()) {
    return "--peer-listen " + o.peer_listen +
           " must name the address and port other nodes connect to (not 0.0.0.0, not port 0)";
  }
  const std::string& prefix = o.cluster_prefix;
  if (prefix.size() < 2 || prefix.front() != '/' || prefix.back() == '/') {
    return "--cluster-prefix '" + prefix +
           "' must start with / and not end with one, such as "
           "/tenure";
  }
  if (o.cluster_lease_ttl < 2000 || o.cluster_lease_ttl % 1000 != 0) {
    return "--cluster-lease-ttl must be whole seconds, at least 2s (etcd's shortest lease)";
  }
  if (o.recover || !o.restore_from.empty() || o.revision_floor != 0) {
    return "--recover, --restore-from and --revision-floor are for a single node's ledger; a "
           "cluster's is in etcd (see docs/cluster.md)";
  }
  return std::nullopt;
}

// What the flags alone cannot check.
std::optional<std::string> contradiction(const Options& o) {
  if (o.limits.min_ttl < 1) return "--min-ttl must be at least 1ms";
  if (o.limits.min_ttl > o.limits.max_ttl) return "--min-ttl is above --max-ttl";
  if (o.max_frame < 64) return "--max-frame must be at least 64 bytes";
  if (o.max_connections < 1 || o.max_inflight < 1 || o.threads < 1) {
    return "--max-connections, --max-inflight-per-connection and --threads must be at least 1";
  }
  if (o.shards > 1024) return "--shards must be at most 1024";
  if (o.watch_queue < 1) return "--watch-queue must be at least 1";
  if (o.max_waiting < 1 || o.max_watches_per_connection < 1 || o.max_watches < 1) {
    return "--max-waiters-per-connection, --max-watches-per-connection and --max-watches must be "
           "at least 1";
  }
  if (o.write_timeout < 1) return "--write-timeout must be at least 1ms";
  if (o.events_keep < 1) return "--events-keep must be at least 1";
  // Bounded so that the ledger writer's wake-up time cannot overflow.
  constexpr Millis kDayMs = 86'400'000;
  if (o.checkpoint_every < 1 || o.checkpoint_every > kDayMs) {
    return "--checkpoint-every must be from 1ms to 24h";
  }
  if (o.checkpoint_ops < 1) return "--checkpoint-ops must be at least 1";
  if (o.recover && !o.restore_from.empty()) {
    return "--recover and --restore-from exclude each other";
  }
  if (o.revision_floor != 0 && !o.recover && o.restore_from.empty()) {
    return "--revision-floor goes with --recover or --restore-from";
  }
  for (const std::string& origin : o.ws_allow_origins) {
    if (auto problem = origin_problem(origin)) return problem;
  }
  return listen_problem(o);
}

}  // namespace

std::optional<int> parse_options(int argc, char** argv, Options& o) {
  o.threads = std::max(1U, std::thread::hardware_concurrency());
  CLI::App app{
      "tenured: the Tenure lease coordinator daemon. Clients talk to it over a Unix socket, one "
      "JSON request per line (see docs/protocol.md); the `tenure` command is one such client.",
      "tenured"};
  app.get_formatter()->column_width(40);
  app.set_version_flag("--version", std::string("tenured ") + build_version());

  app.add_option("--data-dir", o.data_dir,
                 "Directory of the ledger (created 0700; refused if others can write to it)")
      ->default_str("$XDG_STATE_HOME/tenure or ~/.local/state/tenure");
  app.set_config("--config", kDefaultConfigFile,
                 "Read these settings first: `name = value` lines named as the long flags "
                 "(INI or TOML); flags on the command line override them. The default file is "
                 "read only if it exists");
  // A misspelt setting must not silently become its default.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_option("--socket", o.socket, "Unix socket to listen on")
      ->default_str("<data-dir>/tenured.sock");
  std::string socket_mode = "0600", socket_group, admin_group;
  app.add_option("--socket-mode", socket_mode,
                 "Octal mode of the socket file; 0660 with --socket-group lets a group use the "
                 "service (never writable by all)")
      ->capture_default_str();
  app.add_option("--socket-group", socket_group,
                 "Group of the socket file; its directory, if tenured owns it, is made "
                 "traversable by the group (g+x)");
  app.add_option("--admin-group", admin_group,
                 "Members of this group are admins (may revoke) besides root and tenured's own "
                 "user");
  std::string sync = "always";
  app.add_option("--sync", sync,
                 "always: fsync every commit before replying; none: skip fsync (benchmarks, "
                 "throw-away data; a crash can lose acknowledged changes)")
      ->check(CLI::IsMember({"always", "none"}))
      ->capture_default_str();
  auto* default_ttl = add_duration(app, "--default-ttl", o.limits.default_ttl,
                                   "TTL of an acquire that names none", "15m");
  add_duration(app, "--min-ttl", o.limits.min_ttl, "Smallest TTL; shorter ones are raised to it",
               "10ms");
  add_duration(app, "--max-ttl", o.limits.max_ttl, "Largest TTL; longer ones are cut to it", "24h");
  add_duration(app, "--max-lock-delay", o.limits.max_lock_delay,
               "Largest lock_delay_ms an acquire may ask for", "60s");
  app.add_option("--max-frame", o.max_frame,
                 "Longest request in bytes (a socket line, a WebSocket message); a longer one "
                 "gets frame_too_large, and the socket connection is closed (a WebSocket stays)")
      ->capture_default_str();
  app.add_option("--max-connections", o.max_connections,
                 "Open socket connections at most, and as many HTTP/WebSocket ones; more are "
                 "refused (too_many_requests, HTTP 503)")
      ->capture_default_str();
  app.add_option("--max-inflight-per-connection", o.max_inflight,
                 "Unanswered requests per connection before the server stops reading from it")
      ->capture_default_str();
  app.add_option("--max-waiters-per-connection", o.max_waiting,
                 "Acquires with wait_ms waiting at once per connection; more get "
                 "too_many_requests (they do not count as unanswered requests)")
      ->capture_default_str();
  app.add_option("--max-watches-per-connection", o.max_watches_per_connection,
                 "Watches per connection; more get too_many_requests")
      ->capture_default_str();
  app.add_option("--max-watches", o.max_watches,
                 "Watches of all connections together; more get too_many_requests")
      ->capture_default_str();
  add_duration(app, "--write-timeout", o.write_timeout,
               "A connection that takes no byte of its replies for this long is closed (on the "
               "socket after a `closing` notice)",
               "30s");
  app.add_option("--history-keep", o.history_keep,
                 "Ended tenures kept per key in the history (plus the live one)")
      ->capture_default_str();
  add_duration(app, "--checkpoint-every", o.checkpoint_every,
               "How often the ledger writes the lease rows changed since its last checkpoint "
               "(until then the event log holds them; a restart after a crash replays it)",
               "1s");
  app.add_option("--checkpoint-ops", o.checkpoint_ops,
                 "Ops after which the ledger writes a checkpoint sooner than --checkpoint-every")
      ->capture_default_str();
  app.add_option("--threads", o.threads,
                 "Threads serving connections and keys (with --sync always and at most one "
                 "connection open, one of them serves)")
      ->default_str("number of cores");
  app.add_option("--shards", o.shards,
                 "Shards the keys are split into, each owning its keys' actors and timers")
      ->default_str("one per thread");
  app.add_option("--idle-keys", o.idle_keys,
                 "Keys without a lease kept in memory (the most recently used), so that taking "
                 "them again needs no ledger read")
      ->capture_default_str();
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  app.add_option("--log-file", o.log_file, "Log here instead of stderr; SIGHUP reopens it");
  app.add_option("--audit-log", o.audit_log,
                 "Append one JSON line per acquire, renew, release, keepalive and revoke (who, "
                 "what, outcome) to this file (created 0600); SIGHUP reopens it");
  app.add_option("--ws-listen", o.ws_listen,
                 "HOST:PORT of the WebSocket and HTTP listener (dashboard, /metrics, /healthz), "
                 "or off. HOST: an IP address ([::1] for IPv6) or localhost; PORT 0: any free "
                 "port, logged")
      ->capture_default_str();
  app.add_flag("--ws-allow-remote", o.ws_allow_remote,
               "Let --ws-listen name an address other than loopback");
  app.add_option("--ws-allow-origin", o.ws_allow_origins,
                 "Origin (scheme://host[:port]) whose pages may open a WebSocket besides the "
                 "listener's own; repeatable")
      ->allow_extra_args(false);
  app.add_option("--watch-queue", o.watch_queue,
                 "Events of one watch waiting to be written above which the watch is cancelled "
                 "as lagged")
      ->capture_default_str();
  app.add_flag("--recover", o.recover,
               "Open a damaged ledger: keep what can be read, and start the revision and every "
               "key's next token above anything issued before (see docs/operations.md). Once.")
      ->configurable(false);  // for one start: a config file would repeat it at every start
  app.add_option("--restore-from", o.restore_from,
                 "Put this backup (made by `tenure admin backup`) in place of the ledger, keep "
                 "the old one beside it, and start above anything issued before")
      ->configurable(false);
  app.add_option("--revision-floor", o.revision_floor,
                 "With --recover or --restore-from: start above this revision too (needed when "
                 "the data dir's ledger.marks file is lost)")
      ->configurable(false);
  app.add_option("--cluster", o.cluster,
                 "Run as one node of a cluster whose ledger is in etcd (docs/cluster.md); needs "
                 "--etcd-endpoints, --node-id and --peer-listen")
      ->check(CLI::IsMember({"etcd"}));
  std::string endpoints;
  app.add_option("--etcd-endpoints", endpoints,
                 "With --cluster: etcd's client URLs, http://HOST:PORT separated by commas");
  app.add_option("--node-id", o.node_id,
                 "With --cluster: this node's name, unique in the cluster (letters, digits, . _ "
                 "-)");
  app.add_option("--peer-listen", o.peer_listen,
                 "With --cluster: HOST:PORT where other nodes forward requests to this one");
  auto* prefix = app.add_option("--cluster-prefix", o.cluster_prefix,
                                "With --cluster: the etcd key prefix of the cluster's data")
                     ->capture_default_str();
  auto* ttl = add_duration(app, "--cluster-lease-ttl", o.cluster_lease_ttl,
                           "With --cluster: TTL of the node's etcd lease; a node silent this "
                           "long loses its slots to the others",
                           "5s");
  // Not for operators: the ledger's retention of events, small in tests that need `compacted`.
  app.add_option("--events-keep", o.events_keep)->group("");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ConfigError& e) {
    auto* file = app.get_config_ptr();
    std::cerr << "tenured: in the config file "
              << (file != nullptr ? file->as<std::string>() : std::string(kDefaultConfigFile))
              << ": " << e.what()
              << " (settings are the long flags' names without --, as in default-ttl = \"2s\")\n";
    return 1;
  } catch (const CLI::ParseError& e) {
    // --help and --version are a success; every other problem is exit code 1, like the rest of
    // tenured's.
    return app.exit(e) == 0 ? 0 : 1;
  }
  o.sync = sync == "always";
  auto problem = parse_socket_mode(socket_mode, o.socket_mode);
  if (!problem) problem = parse_group("--socket-group", socket_group, o.socket_group);
  if (!problem) problem = parse_group("--admin-group", admin_group, o.admin_group);
  if (!problem) problem = contradiction(o);
  // Given, it must be a TTL the server grants; left out, it is clamped like any other.
  if (!problem && default_ttl->count() > 0 &&
      (o.limits.default_ttl < o.limits.min_ttl || o.limits.default_ttl > o.limits.max_ttl)) {
    problem = "--default-ttl is outside [--min-ttl, --max-ttl]";
  }
  if (!problem) problem = cluster_problem(o, endpoints, prefix->count() > 0, ttl->count() > 0);
  if (problem) {
    std::cerr << "tenured: " << *problem << "\n";
    return 1;
  }
  if (o.data_dir.empty()) {
    // §7: without HOME, no default at all, even where XDG_STATE_HOME would name one.
    const char* home = std::getenv("HOME");
    auto fallback = home && *home ? default_data_dir() : std::nullopt;
    if (!fallback) {
      std::cerr << "tenured: HOME is not set, so there is no default data dir; pass --data-dir "
                   "(tenured never falls back to a shared temporary directory)\n";
      return 1;
    }
    o.data_dir = *fallback;
  }
  o.data_dir = normalized(o.data_dir);
  o.socket = normalized(o.socket.empty() ? o.data_dir + "/tenured.sock" : o.socket);
  if (auto sharing = sharing_problem(o)) {
    std::cerr << "tenured: " << *sharing << "\n";
    return 1;
  }
  if (!o.restore_from.empty()) o.restore_from = normalized(o.restore_from);
  return std::nullopt;
}

}  // namespace tenure
