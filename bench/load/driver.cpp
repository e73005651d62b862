#include "bench/load/driver.hpp"

#include <unistd.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/load/fencing_check.hpp"
#include "bench/load/key_chooser.hpp"
#include "bench/load/lock_client.hpp"
#include "bench/load/wall_clock.hpp"
#include "bench/load/watch_client.hpp"

namespace tenure::bench {

namespace asio = boost::asio;
using asio::as_tuple;
using asio::use_awaitable;
using SteadyClock = std::chrono::steady_clock;

namespace {

// How long after the end connections may take to finish their last cycles before they are
// closed: a cycle caught in a stall must not keep the run going.
constexpr std::int64_t kGraceNs = 5'000'000'000;
// Expiry: how long after the last deadline, and after the last delivery, to wait for more.
constexpr std::int64_t kExpiryGraceMs = 30'000;
// While waiting for watchers to subscribe or for expiries to be delivered, how often to look.
constexpr auto kPoll = std::chrono::milliseconds(20);
// The server's shortest TTL by default (CONTRACT §3): a shorter planned TTL would be raised to
// it and miss its planned deadline.
constexpr std::int64_t kServerMinTtlMs = 10;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

SteadyClock::time_point at_ns(std::int64_t ns) {
  return SteadyClock::time_point(
      std::chrono::duration_cast<SteadyClock::duration>(std::chrono::nanoseconds(ns)));
}

std::int64_t ms_to_ns(std::int64_t ms) { return ms * 1'000'000; }

// A process's CPU time so far (utime + stime from /proc/PID/stat), in seconds; < 0 if unreadable.
double process_cpu_seconds(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  // Fields 14 and 15; the second field, the command name in parentheses, may hold spaces.
  auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return fields ? ticks / static_cast<double>(sysconf(_SC_CLK_TCK)) : -1;
}

// What went wrong, without the source location that Asio's system_error adds to what().
std::string failure(const std::exception& e) {
  if (const auto* s = dynamic_cast<const boost::system::system_error*>(&e)) {
    return s->code().message();
  }
  return e.what();
}

// Operations a cycle of the mix sends when nothing is held: what --rate is divided by.
int ops_per_cycle(Mix mix) {
  switch (mix) {
    case Mix::acquire_renew_release:
      return 3;
    case Mix::expiry:
    case Mix::hold:
      return 1;
    default:
      return 2;
  }
}

struct Shared {
  explicit Shared(const Config& c)
      : config(c),
        check(c.keys),
        zipf(KeyChooser::zipf_table(c)),
        expiry(c.key_prefix, c.mix == Mix::expiry ? c.keys : 0, c.watchers),
        acquiring(c.connections) {
    // Owners differ from any earlier run's, whose leases may still be live on the same server.
    nonce = "b" + std::to_string(std::random_device{}()) + "-";
    start = now_ns();
    warmup_end = start + ms_to_ns(c.warmup.count());
    stop_at = warmup_end + ms_to_ns(c.duration.count());
    window_start_ms = wall_now_ms() + c.expire_after.count();
  }
  bool stopping(std::int64_t now) const { return stop.load() || now >= stop_at; }
  // --expire-window: key n's deadline is window start + window * n / keys, so that the
  // deadlines are spread evenly over the window however fast the keys were acquired.
  std::int64_t planned_ttl_ms(std::size_t key) const {
    auto offset = config.expire_window.count() * static_cast<std::int64_t>(key) /
                  static_cast<std::int64_t>(config.keys);
    return window_start_ms + offset - wall_now_ms();
  }
  // Expiry: nothing is left to wait for once every connection has acquired its last key and
  // every delivery arrived, or once nothing arrived for a while after the last deadline (a
  // server far behind its deadlines is still waited for while it makes progress).
  bool expiries_over() const {
    if (acquiring.load() > 0) return false;
    std::int64_t quiet_since = std::max(expiry.last_deadline_ms(), expiry.last_delivery_ms());
    return expiry.complete() || wall_now_ms() > quiet_since + kExpiryGraceMs;
  }

  const Config& config;
  FencingCheck check;
  std::shared_ptr<const std::vector<double>> zipf;
  std::string nonce;
  std::int64_t start, warmup_end, stop_at;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> measured{0};
  std::atomic<std::int64_t> measure_end{0};  // set when --ops is reached
  std::atomic<std::uint64_t> next_key{0};    // expiry, hold: the next key to acquire
  ExpiryLedger expiry;
  std::int64_t window_start_ms;               // --expire-window: the first deadline, wall clock
  std::atomic<std::size_t> acquiring;         // expiry: connections still acquiring
  std::atomic<std::size_t> watches_ready{0};  // watchers subscribed (or failed to)
  std::atomic<std::int64_t> last_acquired_ns{0};
  double storm_seconds = 0;        // written by the Storm, read after the workers joined
  double server_cpu_seconds = -1;  // likewise
};

// Polls until `done` holds; expiry's waits are long and rare, so a timer beats signalling.
template <typename Done>
asio::awaitable<void> poll_until(asio::io_context& io, Done done) {
  asio::steady_timer timer(io);
  while (!done()) {
    timer.expires_after(kPoll);
    co_await timer.async_wait(as_tuple(use_awaitable));
  }
}

class Worker;

// One client connection and the cycles it runs.
class Connection {
 public:
  Connection(Worker& worker, std::size_t index);
  asio::awaitable<void> run();
  void close() { client_->close(); }

 private:
  asio::awaitable<void> open_loop();
  // One lock cycle; false once the connection is unusable (or, in expiry, every key is taken).
  asio::awaitable<bool> cycle(std::int64_t intended);
  asio::awaitable<void> load();
  asio::awaitable<void> sleep_ms(std::int64_t ms);
  void spawn(asio::awaitable<void> task);
  bool measured(std::int64_t start, std::int64_t end) const;
  void count(const OpResult& r, std::int64_t start, std::int64_t end);
  void on_lost(std::string_view key, std::uint64_t token, std::int64_t received_ms);

  Worker& worker_;
  Shared& shared_;
  const Config& config_;
  Stats& stats_;
  std::size_t index_;
  std::unique_ptr<LockClient> client_;
  std::uint64_t cycles_started_ = 0;
  std::size_t active_ = 0;
  asio::steady_timer idle_;  // cancelled when the last running cycle ends
};

// A watch subscriber (expiry): times every `expired` event of the run's leases.
class Watcher {
 public:
  Watcher(Worker& worker, std::size_t index);
  asio::awaitable<void> run();
  void close() { client_.close(); }

 private:
  void on_event(const WatchEvent& event);

  Worker& worker_;
  Shared& shared_;
  Stats& stats_;
  std::size_t index_;
  WatchClient client_;
};

// Expiry: the storm seen from outside it. From the first deadline (or the last acquire, if later)
// until every expiry was delivered, a connection (and client thread) of its own probes the server
// (--probe-interval: a `ping`, and an acquire and release of a key nobody else uses, started on a
// fixed schedule and timed from when they were due, so that a stall shows in full), and the
// server's CPU time over the same span is read (--server-pid).
class Storm {
 public:
  explicit Storm(Worker& worker);
  asio::awaitable<void> run();
  void close() {
    if (client_) client_->close();
  }

 private:
  bool started() const;
  asio::awaitable<void> probe_loop();
  void spawn(asio::awaitable<void> task);
  asio::awaitable<void> ping(std::int64_t due);
  asio::awaitable<void> acquire_release(std::int64_t due, std::uint64_t n);

  Worker& worker_;
  Shared& shared_;
  Stats& stats_;
  std::unique_ptr<LockClient> client_;  // with --probe-interval
  std::size_t in_flight_ = 0;
};

class Worker {
 public:
  Worker(Shared& shared, std::size_t index)
      : shared(shared),
        chooser(shared.config, shared.zipf, shared.config.seed * 1000 + index),
        watchdog_(io) {}

  void add_connection(std::size_t index) {
    connections_.push_back(std::make_unique<Connection>(*this, index));
  }
  void add_watcher(std::size_t index) {
    watchers_.push_back(std::make_unique<Watcher>(*this, index));
  }
  void add_storm() { storm_ = std::make_unique<Storm>(*this); }

  // Counts a connection's or watcher's end; the watchdog keeps io.run() going until the last.
  auto ended() {
    return [this](std::exception_ptr error) {
      if (error) ++stats.errors["exception"];
      if (++done_ == connections_.size() + watchers_.size() + (storm_ ? 1 : 0)) {
        watchdog_.cancel();
      }
    };
  }

  void start() {
    for (auto& w : watchers_) asio::co_spawn(io, w->run(), ended());
    for (auto& c : connections_) asio::co_spawn(io, c->run(), ended());
    if (storm_) asio::co_spawn(io, storm_->run(), ended());
    const Config& config = shared.config;
    std::int64_t grace = kGraceNs;
    if (config.mix == Mix::waiters) grace += ms_to_ns(config.wait_ms);
    if (config.mix == Mix::expiry) {
      grace += ms_to_ns(config.expire_window.count() > 0
                            ? (config.expire_after + config.expire_window).count()
                            : config.ttl_ms);
    }
    watchdog_.expires_at(at_ns(shared.stop_at + grace));
    watchdog_.async_wait([this](boost::system::error_code error) {
      if (!error) {
        for (auto& w : watchers_) w->close();
        for (auto& c : connections_) c->close();
        if (storm_) storm_->close();
      }
    });
    thread_ = std::thread([this] { io.run(); });
  }

  void join() { thread_.join(); }

  Shared& shared;
  asio::io_context io{1};
  Stats stats;
  KeyChooser chooser;

 private:
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<std::unique_ptr<Watcher>> watchers_;
  std::unique_ptr<Storm> storm_;
  std::size_t done_ = 0;
  asio::steady_timer watchdog_;
  std::thread thread_;
};

Connection::Connection(Worker& worker, std::size_t index)
    : worker_(worker),
      shared_(worker.shared),
      config_(worker.shared.config),
      stats_(worker.stats),
      index_(index),
      client_(make_client(config_, worker.io.get_executor())),
      idle_(worker.io) {}

asio::awaitable<void> Connection::run() {
  co_await load();
  if (config_.mix == Mix::expiry) {
    // Stay connected: `lost` goes only to the connection that acquired the lease.
    --shared_.acquiring;
    co_await poll_until(worker_.io, [this] { return shared_.expiries_over(); });
  }
  if (client_->closed_by_server()) ++stats_.errors["closed_by_server"];
  if (std::uint64_t n = client_->undelivered()) stats_.errors["undelivered"] += n;
  client_->close();
}

asio::awaitable<void> Connection::load() {
  try {
    co_await client_->connect();
  } catch (const std::exception& e) {
    ++stats_.errors["connect: " + failure(e)];
    co_return;
  }
  client_->on_lost([this](std::string_view key, std::uint64_t token, std::int64_t ms) {
    on_lost(key, token, ms);
  });
  // The first leases' events must not precede the watches.
  co_await poll_until(worker_.io,
                      [this] { return shared_.watches_ready.load() == config_.watchers; });
  if (config_.rate) {
    co_await open_loop();
  } else {
    for (std::size_t slot = 0; slot < config_.pipeline; ++slot) {
      spawn([](Connection* self) -> asio::awaitable<void> {
        while (!self->shared_.stopping(now_ns()) && co_await self->cycle(now_ns())) {
        }
      }(this));
    }
  }
  if (active_ > 0) {
    idle_.expires_at(SteadyClock::time_point::max());
    co_await idle_.async_wait(as_tuple(use_awaitable));
  }
}

void Connection::spawn(asio::awaitable<void> task) {
  ++active_;
  asio::co_spawn(worker_.io, std::move(task), [this](std::exception_ptr error) {
    if (error) ++stats_.errors["exception"];
    if (--active_ == 0) idle_.cancel();
  });
}

asio::awaitable<void> Connection::open_loop() {
  double per_connection = *config_.rate / static_cast<double>(config_.connections);
  auto interval = static_cast<std::int64_t>(ops_per_cycle(config_.mix) * 1e9 / per_connection);
  // Connections start their schedules staggered, so that their cycles do not come in bursts.
  std::int64_t next = shared_.start + interval * static_cast<std::int64_t>(index_) /
                                          static_cast<std::int64_t>(config_.connections);
  asio::steady_timer timer(worker_.io);
  while (!shared_.stopping(next)) {
    if (now_ns() < next) {
      timer.expires_at(at_ns(next));
      co_await timer.async_wait(as_tuple(use_awaitable));
    }
    // Behind schedule, cycles start at once, each still timed from when it was due.
    spawn([](Connection* self, std::int64_t due) -> asio::awaitable<void> {
      co_await self->cycle(due);
    }(this, next));
    next += interval;
  }
}

asio::awaitable<bool> Connection::cycle(std::int64_t intended) {
  const Config& c = config_;
  bool expiry = c.mix == Mix::expiry;
  bool once = expiry || c.mix == Mix::hold;  // each key acquired once and never released
  std::size_t key = once ? shared_.next_key++ : worker_.chooser.next();
  if (key >= c.keys) co_return false;  // every key has been taken
  std::int64_t ttl_ms = c.ttl_ms;
  if (expiry && c.expire_window.count() > 0) {
    ttl_ms = shared_.planned_ttl_ms(key);
    if (ttl_ms < kServerMinTtlMs) {
      ++stats_.expiry_skipped;
      co_return true;
    }
  }
  std::string key_name = c.key_prefix + std::to_string(key);
  std::uint64_t owner_id = (static_cast<std::uint64_t>(index_ + 1) << 40) | ++cycles_started_;
  std::string owner = shared_.nonce + std::to_string(owner_id);
  bool queue = c.mix == Mix::waiters && c.target == Target::tenure;
  bool retry = c.mix == Mix::contended || c.mix == Mix::waiters;
  LockArgs args{key_name, owner, ttl_ms, queue ? c.wait_ms : 0};
  Hold hold;

  std::int64_t start = intended;  // an open-loop cycle is late from when it was due
  for (;;) {
    std::int64_t sent = now_ns();
    OpResult r = co_await client_->acquire(args, hold);
    std::int64_t end = now_ns();
    count(r, start, end);
    if (r.outcome == Outcome::acquired) {
      shared_.check.acquired(key, owner_id, r.token, sent, end, ms_to_ns(ttl_ms));
      if (measured(intended, end)) stats_.lock_wait.record((end - intended) / 1000);
      break;
    }
    if (r.outcome != Outcome::held || !retry || shared_.stopping(end)) {
      co_await client_->abandon(hold);
      co_return r.error_kind != "closed";
    }
    co_await sleep_ms(c.retry_ms);
    start = now_ns();
  }

  if (once) {
    if (expiry && hold.expires_at_ms > 0) {
      shared_.expiry.expect(key, hold.token, hold.expires_at_ms);
      ++stats_.leases_to_expire;
    }
    std::int64_t end = now_ns();
    raise_to(shared_.last_acquired_ns, end);
    if (measured(intended, end)) ++stats_.cycles;
    co_return true;
  }
  if (c.mix == Mix::acquire_renew_release) {
    start = now_ns();
    OpResult r = co_await client_->renew(args, hold);
    count(r, start, now_ns());
  }
  start = now_ns();
  shared_.check.releasing(key, owner_id, start);
  OpResult r = co_await client_->release(args, hold);
  std::int64_t end = now_ns();
  count(r, start, end);
  if (r.outcome == Outcome::released && measured(intended, end)) ++stats_.cycles;
  co_return r.error_kind != "closed";
}

asio::awaitable<void> Connection::sleep_ms(std::int64_t ms) {
  if (ms <= 0) co_return;
  asio::steady_timer timer(worker_.io, std::chrono::milliseconds(ms));
  co_await timer.async_wait(as_tuple(use_awaitable));
}

void Connection::on_lost(std::string_view key, std::uint64_t token, std::int64_t received_ms) {
  if (config_.mix != Mix::expiry) {
    ++stats_.errors["lease_lost"];  // a lease the cycle still meant to release ran out
    return;
  }
  stats_.lost.count(shared_.expiry.lost(key, token, received_ms), received_ms);
}

Watcher::Watcher(Worker& worker, std::size_t index)
    : worker_(worker),
      shared_(worker.shared),
      stats_(worker.stats),
      index_(index),
      client_(worker.io.get_executor(), worker.shared.config.socket) {}

asio::awaitable<void> Watcher::run() {
  bool watching = true;
  try {
    co_await client_.watch(shared_.config.key_prefix,
                           [this](const WatchEvent& event) { on_event(event); });
  } catch (const std::exception& e) {
    ++stats_.errors["watch: " + failure(e)];
    watching = false;
  }
  ++shared_.watches_ready;
  if (watching) co_await poll_until(worker_.io, [this] { return shared_.expiries_over(); });
  client_.close();
}

void Watcher::on_event(const WatchEvent& event) {
  if (event.type == "lagged") {
    ++stats_.watch_lags;  // the client resumes it
    return;
  }
  if (event.type != "expired") return;  // the acquires' own events
  stats_.watched.count(shared_.expiry.watched(index_, event.key, event.token, event.received_ms),
                       event.received_ms);
}

Storm::Storm(Worker& worker) : worker_(worker), shared_(worker.shared), stats_(worker.stats) {
  if (shared_.config.probe_interval.count() > 0) {
    client_ = make_client(shared_.config, worker.io.get_executor());
  }
}

bool Storm::started() const {
  if (shared_.acquiring.load() > 0) return false;
  return shared_.config.expire_window.count() == 0 || wall_now_ms() >= shared_.window_start_ms;
}

asio::awaitable<void> Storm::run() {
  if (client_) {
    try {
      co_await client_->connect();
    } catch (const std::exception& e) {
      ++stats_.errors["probe connect: " + failure(e)];
      client_.reset();
    }
  }
  co_await poll_until(worker_.io, [this] { return started() || shared_.expiries_over(); });
  int pid = shared_.config.server_pid;
  double cpu = pid > 0 ? process_cpu_seconds(pid) : -1;
  std::int64_t start = now_ns();
  if (client_) {
    co_await probe_loop();
  } else {
    co_await poll_until(worker_.io, [this] { return shared_.expiries_over(); });
  }
  shared_.storm_seconds = static_cast<double>(now_ns() - start) / 1e9;
  double cpu_after = pid > 0 ? process_cpu_seconds(pid) : -1;
  if (cpu >= 0 && cpu_after >= 0) shared_.server_cpu_seconds = cpu_after - cpu;
  if (client_) {
    co_await poll_until(worker_.io, [this] { return in_flight_ == 0; });
    client_->close();
  }
}

asio::awaitable<void> Storm::probe_loop() {
  std::int64_t interval = ms_to_ns(shared_.config.probe_interval.count());
  std::int64_t next = now_ns();
  asio::steady_timer timer(worker_.io);
  for (std::uint64_t n = 0; !shared_.expiries_over(); ++n, next += interval) {
    if (now_ns() < next) {
      timer.expires_at(at_ns(next));
      co_await timer.async_wait(as_tuple(use_awaitable));
    }
    // Behind schedule, probes start at once, each still timed from when it was due.
    spawn(ping(next));
    spawn(acquire_release(next, n));
  }
}

void Storm::spawn(asio::awaitable<void> task) {
  ++in_flight_;
  asio::co_spawn(worker_.io, std::move(task), [this](std::exception_ptr error) {
    if (error) ++stats_.errors["probe exception"];
    --in_flight_;
  });
}

asio::awaitable<void> Storm::ping(std::int64_t due) {
  OpResult r = co_await client_->ping();
  if (r.outcome != Outcome::pong) co_return void(++stats_.errors["probe ping: " + r.error_kind]);
  stats_.probe_ping.record(static_cast<std::uint64_t>((now_ns() - due) / 1000));
}

asio::awaitable<void> Storm::acquire_release(std::int64_t due, std::uint64_t n) {
  // A key of its own per probe: on no one's strand, in no one's watch.
  std::string key = "tenure-bench-probe/" + shared_.nonce + std::to_string(n);
  std::string owner = shared_.nonce + "probe";
  LockArgs args{key, owner, shared_.config.ttl_ms, 0};
  Hold hold;
  OpResult r = co_await client_->acquire(args, hold);
  std::int64_t acquired = now_ns();
  if (r.outcome != Outcome::acquired) {
    co_return void(
        ++stats_.errors["probe acquire: " + (r.error_kind.empty() ? "held" : r.error_kind)]);
  }
  stats_.probe_acquire.record(static_cast<std::uint64_t>((acquired - due) / 1000));
  r = co_await client_->release(args, hold);
  if (r.outcome != Outcome::released) {
    co_return void(
        ++stats_.errors["probe release: " + (r.error_kind.empty() ? "refused" : r.error_kind)]);
  }
  stats_.probe_release.record(static_cast<std::uint64_t>((now_ns() - acquired) / 1000));
}

// An operation counts if it started after the warm-up and ended inside the measured window.
bool Connection::measured(std::int64_t start, std::int64_t end) const {
  std::int64_t stop = shared_.measure_end.load();
  return start >= shared_.warmup_end && end <= shared_.stop_at && (stop == 0 || end <= stop);
}

void Connection::count(const OpResult& r, std::int64_t start, std::int64_t end) {
  if (!measured(start, end)) return;
  if (config_.ops) {
    std::uint64_t n = ++shared_.measured;
    if (n > *config_.ops) return;
    if (n == *config_.ops) {
      shared_.measure_end = end;
      shared_.stop = true;
    }
  }
  ++stats_.ops;
  stats_.latency.record(static_cast<std::uint64_t>((end - start) / 1000));
  switch (r.outcome) {
    case Outcome::acquired:
      ++stats_.acquired;
      break;
    case Outcome::held:
      ++stats_.held;
      break;
    case Outcome::renewed:
      ++stats_.renewed;
      break;
    case Outcome::released:
      ++stats_.released;
      break;
    case Outcome::not_holder:
      ++stats_.not_holder;
      break;
    case Outcome::pong:
      break;
    case Outcome::error:
      ++stats_.errors[r.error_kind];
      break;
  }
}

}  // namespace

RunResult run(const Config& config) {
  Shared shared(config);
  std::vector<std::unique_ptr<Worker>> workers;
  std::size_t threads = std::min(config.threads, config.connections);
  for (std::size_t t = 0; t < threads; ++t) workers.push_back(std::make_unique<Worker>(shared, t));
  for (std::size_t c = 0; c < config.connections; ++c) workers[c % threads]->add_connection(c);
  for (std::size_t w = 0; w < config.watchers; ++w) workers[w % threads]->add_watcher(w);
  // The probe is an unrelated client: a thread of its own, so that what it measures is the
  // server, not this process's backlog of the storm's pushes (on one client thread, its p99 was
  // mostly that).
  if (config.mix == Mix::expiry && (config.probe_interval.count() > 0 || config.server_pid > 0)) {
    workers.push_back(std::make_unique<Worker>(shared, threads));
    workers.back()->add_storm();
  }
  for (auto& w : workers) w->start();

  RunResult result;
  for (auto& w : workers) {
    w->join();
    result.stats.merge(w->stats);
  }
  std::int64_t end = shared.measure_end.load() ? shared.measure_end.load() : shared.stop_at;
  // Expiry ends its load when every key is taken, usually long before its bound.
  std::int64_t last_acquired = shared.last_acquired_ns.load();
  if ((config.mix == Mix::expiry || config.mix == Mix::hold) && last_acquired > 0) {
    end = std::min(end, last_acquired);
  }
  result.seconds = static_cast<double>(end - shared.warmup_end) / 1e9;
  result.checked = shared.check.checked();
  result.double_grants = shared.check.double_grants();
  result.token_regressions = shared.check.token_regressions();
  // A `lost` that never came is an error, whatever the reason.
  if (config.mix == Mix::expiry && result.stats.lost.delivered < result.stats.leases_to_expire) {
    result.stats.errors["lost_missing"] +=
        result.stats.leases_to_expire - result.stats.lost.delivered;
  }
  result.storm_seconds = shared.storm_seconds;
  result.server_cpu_seconds = shared.server_cpu_seconds;
  if (last_acquired > 0) {
    result.acquire_seconds = static_cast<double>(last_acquired - shared.start) / 1e9;
  }
  return result;
}

}  // namespace tenure::bench
