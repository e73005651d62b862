#pragma once
// What one tenure-bench run does, as parsed from its command line.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace tenure::bench {

enum class Target { tenure, redis, etcd };
enum class Mix { acquire_release, acquire_renew_release, contended, waiters, expiry, hold };
enum class Dist { uniform, zipf, hot };

struct Config {
  Target target = Target::tenure;
  std::string socket;                       // tenure and redis: the Unix socket
  std::string endpoint = "127.0.0.1:2379";  // etcd: HOST:PORT of the HTTP/JSON gateway
  std::size_t connections = 1;
  std::size_t pipeline = 1;  // cycles in flight per connection (closed loop)
  std::size_t threads = 1;   // client threads, each with its own event loop
  std::chrono::milliseconds duration{10'000};
  std::optional<std::uint64_t> ops;  // stop after this many measured operations instead
  std::chrono::milliseconds warmup{1'000};
  std::size_t keys = 10'000;
  std::string key_prefix = "bench/k";
  Dist dist = Dist::uniform;
  double zipf_s = 0.99;
  std::size_t hot_keys = 10;
  Mix mix = Mix::acquire_release;
  std::int64_t ttl_ms = 10'000;
  // expiry: > 0 spreads the leases' deadlines evenly over a window this long that starts
  // expire_after after the run's start (each acquire's TTL is computed to hit its deadline);
  // 0: every lease gets ttl_ms.
  std::chrono::milliseconds expire_window{0};
  std::chrono::milliseconds expire_after{90'000};
  std::size_t watchers = 0;  // expiry, tenure: watch subscribers timing the `expired` events
  // expiry, tenure: > 0 probes the server from another connection during the storm, a `ping` and
  // an acquire/release of an unrelated key every interval.
  std::chrono::milliseconds probe_interval{0};
  int server_pid = 0;  // expiry: the server's process, whose CPU over the storm is reported
  std::int64_t wait_ms = 5'000;  // waiters: how long a queued acquire may wait
  std::int64_t retry_ms = 1;     // contended (and waiters on redis/etcd): pause before a retry
  std::optional<double> rate;    // open loop: total operations per second
  bool json = false;
  std::uint64_t seed = 1;
};

// Parses argv; returns an exit code when the program should stop (help, bad arguments).
std::optional<int> parse_config(int argc, char** argv, Config& config);

const char* to_string(Target target);
const char* to_string(Mix mix);
std::string describe(const Config& config);  // e.g. "zipf:0.99 over 10000 keys"

}  // namespace tenure::bench
