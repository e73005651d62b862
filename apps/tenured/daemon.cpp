#include "apps/tenured/daemon.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "apps/tenured/cluster_node.hpp"
#include "apps/tenured/data_dir_lock.hpp"
#include "apps/tenured/io_threads.hpp"
#include "apps/tenured/logging.hpp"
#include "apps/tenured/private_dir.hpp"
#include "apps/tenured/restore.hpp"
#include "apps/tenured/systemd.hpp"
#include "apps/tenured/ws_token.hpp"
#include "transports/server_context.hpp"
#include "transports/socket_path.hpp"
#include "transports/task_failure.hpp"
#include "transports/unix_server.hpp"
#include "transports/web_server.hpp"

namespace tenure {

namespace asio = boost::asio;

namespace {

// How long shutdown waits for connections to get their last replies before closing them.
constexpr auto kDrainTimeout = std::chrono::seconds(5);
constexpr auto kAbortTimeout = std::chrono::seconds(1);

// Connections and RocksDB's files need descriptors: take all the hard limit allows.
void raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Blocks until SIGTERM or SIGINT and returns it; SIGHUP reopens the logs meanwhile.
int wait_for_stop_signal(asio::io_context& io, asio::signal_set& signals, AuditLog& audit) {
  std::promise<int> stop;
  auto handle = [&]() -> asio::awaitable<void> {
    for (;;) {
      auto [error, signal] = co_await signals.async_wait(asio::as_tuple(asio::use_awaitable));
      if (error) co_return;
      if (signal != SIGHUP) {
        stop.set_value(signal);
        co_return;
      }
      reopen_logs();
      std::string problem;
      if (!audit.reopen(problem)) spdlog::error("{}", problem);
    }
  };
  asio::co_spawn(io, handle, LogTaskFailure("signal handler"));
  return stop.get_future().get();
}

// Checks and prepares the directories and the socket path before anything is opened. An
// inherited socket's path is the service manager's.
// REQUIRES: the data dir made and locked.
bool prepare_paths(const Options& o, bool socket_inherited, std::string& error) {
  if (socket_inherited) return true;
  std::string socket_dir = std::filesystem::path(o.socket).parent_path().string();
  bool shared = (o.socket_mode & 0060) != 0;
  return make_private_dir(socket_dir, SharedDirPolicy::allow_sticky, error) &&
         (!shared || open_dir_to_group(socket_dir, o.socket_group.value_or(::getegid()), error)) &&
         claim_socket_path(o.socket, error);
}

// The HTTP/WebSocket listener, unless --ws-listen is off. The token file is made even then, so
// that it is there the day the listener is turned on.
// A TCP socket passed by the service manager is served whatever --ws-listen says.
bool start_web(const Options& o, int inherited_fd, WebServer& web, std::string& error) {
  auto token = load_or_create_ws_token(o.data_dir, error);
  if (!token) return false;
  if (o.ws_listen == "off" && inherited_fd < 0) return true;
  std::optional<ListenAddress> address = ListenAddress{};
  if (inherited_fd < 0) address = parse_listen_address(o.ws_listen, error);
  if (!address) return false;
  WebOptions options{*address, *token, o.ws_allow_origins, o.max_connections, inherited_fd};
  if (!web.listen(std::move(options), error)) return false;
  web.start();
  spdlog::info(
      "HTTP and WebSocket on {} (/v1/ws, dashboard at /, /metrics, /healthz); "
      "bearer token for mutations in {}/ws.token",
      web.url(), o.data_dir);
  return true;
}

// Time on the engine's scale never goes back across a restart: a wall clock stepped back
// while the ledger was written (or while down) would otherwise stretch every persisted lease.
bool continue_ledger_time(SystemClock& clock, const Engine& engine, std::string& error) {
  std::vector<Event> newest;
  if (auto status = engine.events_from(engine.revision(), 1, newest); !status.ok()) {
    error = "cannot read the ledger's newest event: " + status.message();
    return false;
  }
  if (newest.empty()) return true;
  if (Millis ahead = clock.not_before(newest.front().at); ahead > 0) {
    spdlog::warn(
        "the wall clock is {} ms behind the ledger's newest event; the lease clock continues "
        "from that event's time instead",
        ahead);
  }
  return true;
}

}  // namespace

int run_daemon(const Options& o) {
  raise_descriptor_limit();
  std::string error;
  systemd::InheritedSockets inherited;
  std::optional<UniqueFd> data_dir_lock;
  if (!systemd::take_inherited_sockets(inherited, error) ||
      !make_private_dir(o.data_dir, SharedDirPolicy::refuse, error) ||
      !(data_dir_lock = lock_data_dir(o.data_dir, error)) ||
      !prepare_paths(o, inherited.unix_fd >= 0, error)) {
    spdlog::error("{}", error);
    return 1;
  }
  asio::io_context io(static_cast<int>(o.threads));
  // Caught from before the socket exists: a stop that comes early still stops cleanly.
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  SystemClock clock;
  EngineConfig config;
  config.data_dir = o.data_dir + "/ledger";
  config.sync = o.sync;
  config.shards = o.shards != 0 ? o.shards : o.threads;
  config.idle_keys = o.idle_keys;
  config.limits = o.limits;
  config.history_keep = o.history_keep;
  config.events_keep = o.events_keep;
  config.checkpoint_every = std::chrono::milliseconds(o.checkpoint_every);
  config.checkpoint_ops = o.checkpoint_ops;
  config.revision_floor = o.revision_floor;
  if (o.recover) config.open_mode = storage::OpenMode::recover;
  if (!o.restore_from.empty()) {
    if (!restore_ledger(o.restore_from, config.data_dir, error)) {
      spdlog::error("{}", error);
      return 1;
    }
    config.open_mode = storage::OpenMode::restored;
  }
  // Cluster mode: the ledger is etcd's, and this node writes only the slots it claimed.
  storage::SlotClaims claims;
  storage::EtcdLedger* etcd_ledger = nullptr;
  std::unique_ptr<Engine> engine;
  if (o.cluster.empty()) {
    engine = Engine::open(io, clock, config, error);
  } else if (auto ledger = ClusterNode::open_ledger(o, claims, error)) {
    etcd_ledger = ledger.get();
    config.cluster = true;
    engine = Engine::open(io, clock, config, std::move(ledger));
  }
  if (!engine) {
    // The engine words a second daemon on the same data dir (RocksDB's LOCK) itself.
    spdlog::error("cannot open the ledger {}: {}",
                  o.cluster.empty() ? config.data_dir : o.cluster_prefix + " on etcd", error);
    return 1;
  }
  if (!continue_ledger_time(clock, *engine, error)) {
    spdlog::error("{}", error);
    return 1;
  }
  IoThreads threads(io, o.threads);
  // On every way out, the engine stops before the io threads are joined: its last turns run
  // on them. stop() is idempotent, so the orderly shutdown below may call it first.
  struct StopEngine {
    Engine& engine;
    ~StopEngine() { engine.stop(); }
  } stop_engine{*engine};
  if (!engine->start(error)) {
    spdlog::error("cannot recover the ledger {}: {}", config.data_dir, error);
    return 1;
  }
  SessionLimits limits;
  limits.max_frame = o.max_frame;
  limits.max_inflight = o.max_inflight;
  limits.watch_queue = o.watch_queue;
  AuditLog audit;
  if (!o.audit_log.empty() && !audit.open(o.audit_log, error)) {
    spdlog::error("{}", error);
    return 1;
  }
  limits.max_waiting = o.max_waiting;
  limits.max_watches = o.max_watches_per_connection;
  limits.max_watches_total = o.max_watches;
  limits.write_timeout = std::chrono::milliseconds(o.write_timeout);
  ServerContext context{*engine, limits, clock.now(), {}, {}};
  context.audit = o.audit_log.empty() ? nullptr : &audit;
  // One session is served by one thread (io_threads.hpp). Not in a cluster, where the peers'
  // forwarded requests come on connections of their own.
  if (etcd_ledger == nullptr) {
    threads.serve_with(1);
    context.registry.on_size([&threads, all = o.threads](std::size_t sessions) {
      threads.serve_with(sessions > 1 ? all : 1);
    });
  }
  // Before the listeners: the first request may already name another node's key.
  std::optional<ClusterNode> cluster;
  if (etcd_ledger != nullptr) {
    cluster.emplace(io, o, *engine, *etcd_ledger, claims, context);
    if (!cluster->start(error)) {
      spdlog::error("{}", error);
      return 1;
    }
  }
  // Listening before the socket accepts: whoever sees the socket ready finds the web side ready.
  WebServer web(io, context);
  if (!start_web(o, inherited.tcp_fd, web, error)) {
    spdlog::error("{}", error);
    return 1;
  }
  UnixServer server(io, context, o.max_connections,
                    SocketAccess{o.socket_mode, o.socket_group, o.admin_group});
  bool listening = inherited.unix_fd >= 0 ? server.adopt(inherited.unix_fd, error)
                                          : server.listen(o.socket, error);
  if (!listening) {
    spdlog::error("{}", error);
    return 1;
  }
  server.start();
  spdlog::info("tenured {} listening on {}{}; ledger {}; sync {}; {} threads", TENURE_VERSION,
               server.path(), inherited.unix_fd >= 0 ? " (from the service manager)" : "",
               o.cluster.empty() ? config.data_dir : o.cluster_prefix + " on etcd",
               o.sync ? "always" : "none", o.threads);
  if (!o.sync) {
    spdlog::warn(
        "--sync=none: commits are not fsync'd; a crash can lose changes clients were "
        "told about. For benchmarks and throw-away data only.");
  }

  // The ledger is open and both listeners accept: systemd may now start what depends on us.
  systemd::start_watchdog(io);
  systemd::notify("READY=1");

  int stop_signal = wait_for_stop_signal(io, signals, audit);
  systemd::notify("STOPPING=1");
  spdlog::info("{}: stopping", stop_signal == SIGTERM ? "SIGTERM" : "SIGINT");
  server.stop();
  if (o.ws_listen != "off" || inherited.tcp_fd >= 0) web.stop();
  if (cluster) cluster->stop();  // the other nodes take this one's slots over now
  context.registry.drain_all();
  engine->stop();  // answers waiters, finishes what was admitted, closes the ledger's writer
  if (!context.registry.wait_empty(kDrainTimeout)) {
    spdlog::warn("{} connections still busy after {}s; closing them", context.registry.size(),
                 kDrainTimeout.count());
    context.registry.abort_all();
    context.registry.wait_empty(kAbortTimeout);
  }
  threads.join();
  // Handlers still queued on the stopped io_context may hold sessions, which touch the context
  // and the engine as they close; left to ~io_context they would close after both are gone.
  // Their sockets are closed by now, so their handlers are ready: run them here, while
  // everything is alive.
  io.restart();
  auto deadline = std::chrono::steady_clock::now() + kAbortTimeout;
  while (context.registry.size() > 0 && std::chrono::steady_clock::now() < deadline) {
    if (io.poll() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (std::size_t left = context.registry.size()) {
    // Destroying them later would touch freed memory: better not to destroy them at all.
    spdlog::error("{} connections did not end; exiting without waiting for them", left);
    std::_Exit(1);
  }
  spdlog::info("stopped");
  return 0;
}

}  // namespace tenure
