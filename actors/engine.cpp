#include "actors/engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <latch>
#include <mutex>

#include "actors/engine_core.hpp"
#include "actors/key_actor.hpp"
#include "actors/reads.hpp"

namespace tenure {

std::string_view to_string(OpKind kind) {
  static constexpr std::string_view kNames[] = {"acquire", "renew", "release", "keepalive", "check",
                                                "get",     "list",  "history", "revoke"};
  return kNames[static_cast<std::size_t>(kind)];
}

struct Engine::Impl {
  Impl(boost::asio::io_context& io, const Clock& clock, EngineConfig config,
       std::unique_ptr<storage::Ledger> ledger)
      : core(io, clock, std::move(config), std::move(ledger)) {}

  EngineCore core;
  // Admitted requests: stop() closes it and waits until every one has had its reply.
  TurnGate requests;
  std::atomic<std::uint64_t> next_watch_id{1};

  // Counts the request and lets it in unless the engine is stopping (then answers it).
  template <typename Result>
  bool admit(OpKind kind, Reply<Result>& reply) {
    core.counters.ops[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
    if (requests.enter()) return true;
    Result result;
    result.error = Error{errc::unavailable, "the server is shutting down"};
    reply(std::move(result));
    return false;
  }

  template <typename Result>
  Reply<Result> tracked(Reply<Result> reply) {
    return [this, reply = std::move(reply)](Result result) {
      reply(std::move(result));
      requests.leave();
    };
  }

  void stamp(Caller& caller) const {
    if (caller.received_at == 0) caller.received_at = core.clock.now();
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() { stop(); }

std::unique_ptr<Engine> Engine::open(boost::asio::io_context& io, const Clock& clock,
                                     EngineConfig config, std::string& error) {
  storage::LedgerOptions options;
  options.path = config.data_dir;
  options.mode = config.open_mode;
  options.revision_floor = config.revision_floor;
  options.sync = config.sync;
  options.history_keep = config.history_keep;
  options.history_max_age = config.history_max_age;
  options.events_keep = config.events_keep;
  options.env = config.ledger_env;
  options.skip_verify = config.skip_verify;
  storage::Status status;
  auto ledger = storage::Ledger::open(options, status);
  if (!ledger) {
    error = status.message();
    return nullptr;
  }
  if (!ledger->recovery_note().empty()) spdlog::warn("{}", ledger->recovery_note());
  config.limits.token_floor = ledger->token_floor();
  auto impl = std::make_unique<Impl>(io, clock, std::move(config), std::move(ledger));
  EventBus& bus = impl->core.bus;
  impl->core.ledger->writer().set_event_sink(
      [&bus](std::vector<Event> events) { bus.publish(std::move(events)); });
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

bool Engine::start(std::string& error) {
  EngineCore& core = impl_->core;
  std::vector<std::pair<std::string, storage::LoadedState>> rows;
  storage::Status status =
      core.ledger->scan_leases([&](std::string key, storage::LoadedState loaded) {
        rows.emplace_back(std::move(key), std::move(loaded));
      });
  if (!status.ok()) {
    error = status.message();
    return false;
  }
  std::size_t corrupt = 0;
  // Each recovery turn counts down once its writes are handed to the ledger; then one flush
  // makes them all durable before the first request is served.
  std::latch turns(static_cast<std::ptrdiff_t>(rows.size()));
  for (auto& [key, loaded] : rows) {
    corrupt += loaded.corrupt ? 1 : 0;
    core.registry.ref(key)->post_recover(std::move(loaded), [&turns] { turns.count_down(); });
  }
  turns.wait();
  core.ledger->writer().flush();
  std::size_t compacted = 0;
  status = core.ledger->compact_history(core.clock.now(), compacted);
  if (!status.ok()) {
    error = "cannot compact the history: " + status.message();
    return false;
  }
  spdlog::info(
      "ledger recovered: revision {}, {} leases loaded, {} undecodable rows, {} old "
      "tenure records compacted",
      core.ledger->revision(), rows.size(), corrupt, compacted);
  return core.ledger->healthy() || (error = "the ledger refused the recovery writes", false);
}

void Engine::stop() {
  if (!impl_->requests.close()) return;
  EngineCore& core = impl_->core;
  for (auto& actor : core.registry.snapshot()) actor->post_shutdown();
  if (!impl_->requests.wait_idle(std::chrono::seconds(10))) {
    spdlog::warn("stopping with {} requests unanswered", impl_->requests.open());
  }
  core.registry.cancel_timers();
  core.ledger->writer().flush();
  core.ledger->writer().stop();
  // Nothing hands out tickets any more; what is queued runs (or is dropped) and then nothing of
  // the engine is touched from the io threads, so the engine may be destroyed.
  if (!core.turns.wait_idle(std::chrono::seconds(10))) {
    spdlog::warn("stopping with {} actor turns still queued", core.turns.open());
  }
}

void Engine::acquire(AcquireRequest request, Reply<AcquireResult> reply) {
  if (!impl_->admit(OpKind::acquire, reply)) return;
  impl_->stamp(request.caller);
  auto actor = impl_->core.registry.ref(request.key);
  actor->post_acquire(std::move(request), impl_->tracked(std::move(reply)));
}

void Engine::renew(RenewRequest request, Reply<HolderResult> reply) {
  if (!impl_->admit(OpKind::renew, reply)) return;
  impl_->stamp(request.caller);
  auto actor = impl_->core.registry.ref(request.key);
  actor->post_renew(std::move(request), impl_->tracked(std::move(reply)));
}

void Engine::release(ReleaseRequest request, Reply<HolderResult> reply) {
  if (!impl_->admit(OpKind::release, reply)) return;
  impl_->stamp(request.caller);
  auto actor = impl_->core.registry.ref(request.key);
  actor->post_release(std::move(request), impl_->tracked(std::move(reply)));
}

void Engine::revoke(RevokeRequest request, Reply<HolderResult> reply) {
  if (!impl_->admit(OpKind::revoke, reply)) return;
  impl_->stamp(request.caller);
  if (!request.caller.admin) {
    HolderResult result;
    result.error = Error{errc::forbidden, "revoke is for admin principals only"};
    impl_->tracked(std::move(reply))(std::move(result));
    return;
  }
  auto actor = impl_->core.registry.ref(request.key);
  actor->post_revoke(std::move(request), impl_->tracked(std::move(reply)));
}

void Engine::check(CheckRequest request, Reply<HolderResult> reply) {
  if (!impl_->admit(OpKind::check, reply)) return;
  impl_->stamp(request.caller);
  EngineCore& core = impl_->core;
  if (auto actor = core.registry.find_ref(request.key)) {
    actor->post_check(std::move(request), impl_->tracked(std::move(reply)));
    return;
  }
  // Not resident, so no live lease: answer from the row without waking an actor.
  auto done = impl_->tracked(std::move(reply));
  HolderResult result;
  storage::LoadedState loaded;
  if (storage::Status status = core.ledger->load(request.key, loaded); !status.ok()) {
    result.error = ledger_unreadable(status);
    done(std::move(result));
    return;
  }
  Change ignored;
  HolderOutcome outcome = tenure::check(loaded.state, request.key, request.token, request.owner,
                                        request.caller.received_at, ignored);
  result.status = outcome.status;
  result.reason = outcome.reason;
  result.key = request.key;
  result.lease = loaded.state.lease;
  done(std::move(result));
}

void Engine::get(GetRequest request, Reply<GetResult> reply) {
  if (!impl_->admit(OpKind::get, reply)) return;
  impl_->stamp(request.caller);
  EngineCore& core = impl_->core;
  if (auto actor = core.registry.find_ref(request.key)) {
    actor->post_get(std::move(request), impl_->tracked(std::move(reply)));
    return;
  }
  auto done = impl_->tracked(std::move(reply));
  GetResult result;
  storage::LoadedState loaded;
  if (storage::Status status = core.ledger->load(request.key, loaded); !status.ok()) {
    result.error = ledger_unreadable(status);
  } else {
    result.key = request.key;
    const auto& lease = loaded.state.lease;
    if (lease && lease->live_at(request.caller.received_at)) result.lease = lease;
    result.last_token = loaded.state.last_token;
    // An actor may retire during lock-delay: the row still has it.
    if (!result.lease && loaded.state.lock_until > request.caller.received_at) {
      result.lock_delay_until = loaded.state.lock_until;
    }
  }
  done(std::move(result));
}

void Engine::history(HistoryRequest request, Reply<HistoryResult> reply) {
  if (!impl_->admit(OpKind::history, reply)) return;
  impl_->stamp(request.caller);
  EngineCore& core = impl_->core;
  if (auto actor = core.registry.find_ref(request.key)) {
    actor->post_history(std::move(request), impl_->tracked(std::move(reply)));
    return;
  }
  impl_->tracked(std::move(reply))(read_history(*core.ledger, request));
}

void Engine::list(ListRequest request, Reply<ListResult> reply) {
  if (!impl_->admit(OpKind::list, reply)) return;
  impl_->stamp(request.caller);
  impl_->tracked(std::move(reply))(
      read_list(*impl_->core.ledger, request, request.caller.received_at));
}

void Engine::keepalive(KeepaliveRequest request, Reply<KeepaliveResult> reply) {
  if (!impl_->admit(OpKind::keepalive, reply)) return;
  impl_->stamp(request.caller);
  EngineCore& core = impl_->core;
  auto done = impl_->tracked(std::move(reply));
  std::vector<std::string> keys = core.owners.keys_of(request.owner);
  if (keys.empty()) {
    done(KeepaliveResult{std::nullopt, 0, core.ledger->revision()});
    return;
  }
  // Renews every key through its actor; the last answer replies for all.
  struct Tally {
    std::mutex mutex;
    std::size_t remaining;
    KeepaliveResult result;
    Reply<KeepaliveResult> done;
  };
  auto tally = std::make_shared<Tally>();
  tally->remaining = keys.size();
  tally->done = std::move(done);
  for (std::string& key : keys) {
    RenewRequest renew{key, HolderParams{request.owner, std::nullopt, 0, false}, request.ttl_ms,
                       request.caller};
    renew.caller.admin = false;  // only the leases this principal acquired
    core.registry.ref(key)->post_renew(std::move(renew), [tally, &core](HolderResult r) {
      std::unique_lock lock(tally->mutex);
      if (!r.error && (r.status == HolderStatus::ok || r.status == HolderStatus::noop)) {
        tally->result.count++;
      }
      tally->result.revision = std::max(tally->result.revision, r.revision);
      if (--tally->remaining > 0) return;
      if (tally->result.revision == 0) tally->result.revision = core.ledger->revision();
      lock.unlock();
      tally->done(std::move(tally->result));
    });
  }
}

ConnId Engine::connect(std::weak_ptr<ConnectionListener> listener) {
  return impl_->core.connections.add(std::move(listener));
}

void Engine::disconnect(ConnId conn, std::vector<std::string> keys) {
  EngineCore& core = impl_->core;
  core.connections.remove(conn);
  // Taken before the check, so that stop() either sees this ticket or this call sees stopping.
  // A stopped engine writes nothing more; recovery releases the connection-bound leases.
  TurnGate::Ticket ticket(core.turns);
  if (impl_->requests.closed()) return;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const std::string& key : keys) {
    if (auto actor = core.registry.find_ref(key)) actor->post_disconnect(conn);
  }
}

std::shared_ptr<Watch> Engine::watch(WatchFilter filter, std::optional<Revision> from,
                                     std::weak_ptr<WatchSink> sink, Revision& current) {
  EngineCore& core = impl_->core;
  auto watch = std::make_shared<Watch>(impl_->next_watch_id.fetch_add(1), std::move(filter),
                                       std::move(sink));
  TurnGate::Ticket ticket(core.turns);  // as in disconnect: no replay is queued after stop()
  if (impl_->requests.closed()) from.reset();
  current = watch->start(core, from);
  return watch;
}

void Engine::unwatch(const std::shared_ptr<Watch>& watch) { watch->cancel(impl_->core.bus); }

void Engine::fire_due_timers() { impl_->core.registry.fire_due(); }

EventBus& Engine::events() { return impl_->core.bus; }

storage::Status Engine::events_from(Revision from, std::size_t limit,
                                    std::vector<Event>& events) const {
  return impl_->core.ledger->events_from(from, limit, events);
}

storage::Status Engine::backup(const std::string& dir) const {
  return impl_->core.ledger->backup(dir);
}

bool Engine::healthy() const { return impl_->core.ledger->healthy(); }
Revision Engine::revision() const { return impl_->core.ledger->revision(); }
Revision Engine::oldest_revision() const { return impl_->core.ledger->oldest_revision(); }
const Clock& Engine::clock() const { return impl_->core.clock; }
const EngineConfig& Engine::config() const { return impl_->core.config; }

EngineStats Engine::stats() const {
  const EngineCore& core = impl_->core;
  EngineStats s;
  s.revision = core.ledger->revision();
  s.oldest_revision = core.ledger->oldest_revision();
  s.live_leases = static_cast<std::uint64_t>(std::max<std::int64_t>(core.counters.live_leases, 0));
  s.resident_keys = core.registry.resident();
  s.waiters = static_cast<std::uint64_t>(std::max<std::int64_t>(core.counters.waiters, 0));
  s.expired = core.counters.expired.load();
  s.pending_turns = core.turns.open();
  for (std::size_t i = 0; i < s.ops.size(); ++i) s.ops[i] = core.counters.ops[i].load();
  for (std::size_t i = 0; i < s.expiry_lateness_ms_log2.size(); ++i) {
    s.expiry_lateness_ms_log2[i] = core.counters.expiry_lateness_ms_log2[i].load();
  }
  s.expiry_lateness_ms_sum = core.counters.expiry_lateness_ms_sum.load();
  s.writer = core.ledger->writer().stats();
  s.healthy = core.ledger->healthy();
  return s;
}

}  // namespace tenure
