#include "bench/load/config.hpp"

#include <CLI/CLI.hpp>
#include <map>

#include "core/duration.hpp"

namespace tenure::bench {
namespace {

// How long a run with --ops (and no --duration) may take at most.
constexpr std::chrono::milliseconds kOpsBound{600'000};

void add_duration(CLI::App& app, const std::string& name, std::chrono::milliseconds& target,
                  const std::string& help) {
  app.add_option_function<std::string>(
         name,
         [&target, name](const std::string& text) {
           auto ms = parse_duration(text);
           if (!ms) throw CLI::ValidationError(name, "'" + text + "' is not a duration");
           target = std::chrono::milliseconds(*ms);
         },
         help + " (250ms, 10s, 2m, or milliseconds)")
      ->default_str(std::to_string(target.count()) + "ms");
}

void parse_dist(const std::string& text, Config& c) {
  auto colon = text.find(':');
  std::string name = text.substr(0, colon);
  std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  try {
    if (name == "uniform" && arg.empty()) {
      c.dist = Dist::uniform;
      return;
    }
    if (name == "zipf" && !arg.empty()) {
      c.dist = Dist::zipf;
      c.zipf_s = std::stod(arg);
      if (c.zipf_s > 0) return;
    }
    if (name == "hot" && !arg.empty()) {
      c.dist = Dist::hot;
      c.hot_keys = std::stoul(arg);
      if (c.hot_keys > 0) return;
    }
  } catch (const std::exception&) {
  }
  throw CLI::ValidationError("--dist", "'" + text + "' is not uniform, zipf:S (S>0) or hot:K");
}

}  // namespace

std::optional<int> parse_config(int argc, char** argv, Config& c) {
  CLI::App app{
      "tenure-bench: drives a lease workload against tenured (NDJSON over its Unix socket), or "
      "the same fenced lock on Redis (RESP, Lua) or etcd (HTTP/JSON gateway), and reports "
      "throughput, latency percentiles, errors and lock-safety violations.",
      "tenure-bench"};
  app.get_formatter()->column_width(36);
  std::map<std::string, Target> targets = {
      {"tenure", Target::tenure}, {"redis", Target::redis}, {"etcd", Target::etcd}};
  std::map<std::string, Mix> mixes = {{"acquire-release", Mix::acquire_release},
                                      {"acquire-renew-release", Mix::acquire_renew_release},
                                      {"contended", Mix::contended},
                                      {"waiters", Mix::waiters},
                                      {"expiry", Mix::expiry},
                                      {"hold", Mix::hold}};
  app.add_option("--target", c.target, "tenure, redis or etcd")
      ->transform(CLI::CheckedTransformer(targets))
      ->default_str("tenure");
  app.add_option("--socket", c.socket,
                 "Unix socket of tenured or redis-server; tenure: several (a cluster's nodes), "
                 "comma-separated, that the connections take in turn");
  app.add_option("--endpoint", c.endpoint, "etcd: HOST:PORT of its HTTP/JSON gateway")
      ->capture_default_str();
  app.add_option("--connections", c.connections, "Client connections")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--pipeline", c.pipeline,
                 "Lock cycles in flight per connection (etcd: one HTTP connection each)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", c.threads, "Client threads (connections are spread over them)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_duration(app, "--duration", c.duration, "Measured time, after the warm-up");
  app.add_option("--ops", c.ops, "Stop after this many measured operations instead");
  add_duration(app, "--warmup", c.warmup, "Unmeasured time before measuring");
  app.add_option("--keys", c.keys, "Distinct keys")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--key-prefix", c.key_prefix, "Keys are PREFIX<n>")->capture_default_str();
  app.add_option_function<std::string>(
         "--dist", [&c](const std::string& text) { parse_dist(text, c); },
         "Which key each cycle takes: uniform, zipf:S (rank r drawn with weight 1/r^S), or "
         "hot:K (90% of cycles on K hot keys, 10% uniform over all)")
      ->default_str("uniform");
  app.add_option("--mix", c.mix,
                 "acquire-release | acquire-renew-release | contended (held: retry after "
                 "--retry) | waiters (tenure: queue with wait_ms; others: retry) | expiry "
                 "(acquire each key once, never release; tenure: time the lost events) | hold "
                 "(acquire each key once, never release, and end: the leases stay live)")
      ->transform(CLI::CheckedTransformer(mixes))
      ->default_str("acquire-release");
  app.add_option("--ttl", c.ttl_ms, "Lease TTL in ms (etcd: rounded up to seconds)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  add_duration(app, "--expire-window", c.expire_window,
               "expiry: spread the deadlines evenly over this window (0: all get --ttl)");
  add_duration(app, "--expire-after", c.expire_after,
               "expiry: the window's first deadline, from the start; keys acquired too late for "
               "their deadline are skipped");
  app.add_option("--watchers", c.watchers,
                 "expiry, tenure: watch subscribers on the socket that time the expired events")
      ->capture_default_str();
  add_duration(app, "--probe-interval", c.probe_interval,
               "expiry, tenure: from the first deadline until every expiry is delivered, another "
               "connection sends a ping and acquires and releases a key of its own this often, "
               "each timed from when it was due (0: no probe)");
  app.add_option("--server-pid", c.server_pid,
                 "expiry: the server's pid; its CPU time (utime + stime) over the storm is "
                 "reported per lease expired")
      ->check(CLI::PositiveNumber);
  app.add_option("--wait", c.wait_ms, "waiters: wait_ms of a queued acquire")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--retry", c.retry_ms, "Pause in ms before retrying a held key")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--rate", c.rate,
                 "Open loop: total operations per second, cycles started at fixed intervals and "
                 "latency timed from each one's intended start")
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", c.json, "Print one JSON object instead of text");
  app.add_option("--seed", c.seed, "Seed of the key choice")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  // With --ops, or in expiry where each key is taken once, the count ends the run; the
  // duration is then only a bound.
  if ((c.ops || c.mix == Mix::expiry || c.mix == Mix::hold) && app.count("--duration") == 0) {
    c.duration = kOpsBound;
  }
  if (c.target != Target::etcd && c.socket.empty()) {
    std::cerr << "tenure-bench: --socket is required for --target " << to_string(c.target) << "\n";
    return 1;
  }
  if (c.expire_window.count() > 0 && c.mix != Mix::expiry) {
    std::cerr << "tenure-bench: --expire-window needs --mix expiry\n";
    return 1;
  }
  if (c.watchers > 0 && (c.mix != Mix::expiry || c.target != Target::tenure)) {
    std::cerr << "tenure-bench: --watchers needs --mix expiry and --target tenure\n";
    return 1;
  }
  if ((c.probe_interval.count() > 0 || c.server_pid > 0) && c.mix != Mix::expiry) {
    std::cerr << "tenure-bench: --probe-interval and --server-pid need --mix expiry\n";
    return 1;
  }
  if (c.probe_interval.count() > 0 && c.target != Target::tenure) {
    std::cerr << "tenure-bench: --probe-interval needs --target tenure\n";
    return 1;
  }
  return std::nullopt;
}

const char* to_string(Target target) {
  switch (target) {
    case Target::tenure:
      return "tenure";
    case Target::redis:
      return "redis";
    case Target::etcd:
      return "etcd";
  }
  return "?";
}

const char* to_string(Mix mix) {
  switch (mix) {
    case Mix::acquire_release:
      return "acquire-release";
    case Mix::acquire_renew_release:
      return "acquire-renew-release";
    case Mix::contended:
      return "contended";
    case Mix::waiters:
      return "waiters";
    case Mix::expiry:
      return "expiry";
    case Mix::hold:
      return "hold";
  }
  return "?";
}

std::string describe(const Config& c) {
  std::string keys = " over " + std::to_string(c.keys) + " keys";
  switch (c.dist) {
    case Dist::uniform:
      return "uniform" + keys;
    case Dist::zipf:
      return "zipf:" + std::to_string(c.zipf_s) + keys;
    case Dist::hot:
      return "hot:" + std::to_string(c.hot_keys) + keys;
  }
  return keys;
}

}  // namespace tenure::bench
