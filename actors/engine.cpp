#include "actors/engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <latch>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>

#include "actors/engine_core.hpp"
#include "actors/key_actor.hpp"
#include "actors/reads.hpp"
#include "core/thread_name.hpp"
#include "storage/ledger.hpp"

namespace tenure {

namespace {

// What a burst holds for a shard: each request with its reply and the function that runs it on
// the shard, in variants, so that a burst's requests to a shard fit in one vector.
struct ShardCall {
  using Run = void (*)(Engine::Impl&, Shard&, ShardCall&);
  Run run;
  std::variant<AcquireRequest, RenewRequest, ReleaseRequest, RevokeRequest, CheckRequest,
               GetRequest, HistoryRequest>
      request;
  std::variant<Reply<AcquireResult>, Reply<HolderResult>, Reply<GetResult>, Reply<HistoryResult>>
      reply;
};
using ShardCalls = std::vector<ShardCall>;

// Emptied vectors kept per thread for the next bursts, and the most calls a kept one holds. A
// vector goes back to the thread that ran its turn, and the turns a thread runs and the bursts it
// sends drift apart by dozens at 50 connections on two io threads: 16 kept missed for half the
// bursts there.
constexpr std::size_t kSpareCallVectors = 64;
constexpr std::size_t kKeptCallCapacity = 256;
// Room in a new vector: a pipelined read's calls to a shard fit without regrowing it.
constexpr std::size_t kNewCallCapacity = 16;

// The burst open on this thread, if any: its engine and what it holds, by shard index.
struct OpenBurst {
  Engine::Impl* engine = nullptr;
  std::vector<ShardCalls> calls;
  std::vector<ShardCalls> spare;

  ShardCalls take_spare() {
    if (spare.empty()) {
      // Vectors go back to the spares of the thread that ran their shard's turn, so a thread
      // that reads more than it runs makes new ones.
      ShardCalls calls;
      calls.reserve(kNewCallCapacity);
      return calls;
    }
    ShardCalls calls = std::move(spare.back());
    spare.pop_back();
    return calls;
  }
  void recycle(ShardCalls& calls) {
    calls.clear();
    if (calls.capacity() <= kKeptCallCapacity && spare.size() < kSpareCallVectors) {
      spare.push_back(std::move(calls));
    }
  }
};
thread_local OpenBurst open_burst;

template <typename>
struct ActorOp;
template <typename Request, typename Result>
struct ActorOp<void (KeyActor::*)(Request, Reply<Result>)> {
  using RequestType = Request;
  using ResultType = Result;
};

// A read of a key with no resident actor: `answer(state, result)` answers from the key's row.
template <typename Result, typename Request, typename Answer>
Result answer_from_row(const storage::LedgerStore& ledger, const Request& request, Answer answer) {
  Result result;
  storage::LoadedState loaded;
  if (storage::Status status = ledger.load(request.key, loaded); !status.ok()) {
    result.error = ledger_unreadable(status);
  } else {
    result.key = request.key;
    answer(loaded.state, result);
  }
  return result;
}

HolderResult check_cold(const storage::LedgerStore& ledger, const CheckRequest& request) {
  return answer_from_row<HolderResult>(ledger, request, [&](auto& state, HolderResult& result) {
    Change ignored;
    HolderOutcome outcome = tenure::check(state, request.key, request.token, request.owner,
                                          request.caller.received_at, ignored);
    result.status = outcome.status;
    result.reason = outcome.reason;
    result.lease = state.lease;
  });
}

GetResult get_cold(const storage::LedgerStore& ledger, const GetRequest& request) {
  return answer_from_row<GetResult>(ledger, request, [&](auto& state, GetResult& result) {
    const auto& lease = state.lease;
    if (lease && lease->live_at(request.caller.received_at)) result.lease = lease;
    result.last_token = state.last_token;
    // An actor may retire during lock-delay: the row still has it.
    if (!result.lease && state.lock_until > request.caller.received_at) {
      result.lock_delay_until = state.lock_until;
    }
  });
}

}  // namespace

struct Engine::Impl {
  Impl(boost::asio::io_context& io, const Clock& clock, EngineConfig config,
       std::unique_ptr<storage::LedgerStore> ledger)
      : core(io, clock, std::move(config), std::move(ledger)) {}

  EngineCore core;
  // Admitted requests, each counted until its turn on its shard has run (a reply that waits for
  // its write follows from the commit's turn, which the turn gate counts). stop() closes it and
  // waits for it, so that nothing of a request is queued behind the shutdown of the shards.
  TurnGate requests;
  std::atomic<std::uint64_t> next_watch_id{1};
  // The backup being taken, if any (Engine::backup): stop() waits for it before the ledger
  // closes.
  std::mutex backup_mutex;
  std::thread backup_thread;
  bool backing_up = false;

  // Counts the request and lets it in unless the engine is stopping (then answers it).
  template <typename Result>
  bool admit(protocol::Op kind, Reply<Result>& reply) {
    core.counters.ops[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
    if (requests.enter()) return true;
    Result result;
    result.error = Error{errc::unavailable, "the server is shutting down"};
    reply(std::move(result));
    return false;
  }

  void stamp(Caller& caller) const {
    if (caller.received_at == 0) caller.received_at = core.clock.now();
  }

  // Runs the call if its shard serves its key (a cluster node: only in the slots it adopted);
  // else answers it `unavailable`.
  void run_served(Shard& shard, ShardCall& call) {
    if (core.config.cluster &&
        !shard.serves(
            std::visit([](auto& r) -> std::string_view { return r.key; }, call.request))) {
      std::visit(
          []<typename R>(Reply<R>& reply) {
            R result;
            result.error = Error{errc::unavailable, kKeyMoved};
            reply(std::move(result));
          },
          call.reply);
      return;
    }
    call.run(*this, shard, call);
  }

  // Admits the request and has `run` run it on its key's shard: with the burst open on this
  // thread, or in a message of its own.
  template <typename Request, typename Result>
  void submit(protocol::Op kind, Request request, Reply<Result> reply, ShardCall::Run run) {
    if (!admit(kind, reply)) return;
    stamp(request.caller);
    std::size_t index = core.shard_index(request.key);
    ShardCall call{run, std::move(request), std::move(reply)};
    if (open_burst.engine == this) {
      open_burst.calls[index].push_back(std::move(call));
      return;
    }
    Shard& shard = *core.shards[index];
    shard.post([this, &shard, call = std::move(call)]() mutable {
      run_served(shard, call);
      requests.leave();
    });
  }

  // Sends what the burst open on this thread holds, one message per shard. REQUIRES: it is
  // this engine's.
  void send_burst() {
    for (std::size_t i = 0; i < open_burst.calls.size(); ++i) {
      ShardCalls& calls = open_burst.calls[i];
      if (calls.empty()) continue;
      Shard& shard = *core.shards[i];
      shard.post([this, &shard, calls = std::move(calls)]() mutable {
        for (ShardCall& call : calls) {
          run_served(shard, call);
          requests.leave();
        }
        open_burst.recycle(calls);
      });
      calls = open_burst.take_spare();
    }
  }
  // Sends the burst open on this thread first, if it is this engine's: what follows must not
  // overtake it.
  void send_open_burst() {
    if (open_burst.engine == this) send_burst();
  }

  // Runs a request on its key's actor.
  template <auto op>
  static void on_actor(Impl&, Shard& shard, ShardCall& call) {
    using Types = ActorOp<decltype(op)>;
    auto& request = *std::get_if<typename Types::RequestType>(&call.request);
    auto& reply = *std::get_if<Reply<typename Types::ResultType>>(&call.reply);
    ActorRef actor = shard.actor(request.key);
    ((*actor).*op)(std::move(request), std::move(reply));
    actor->maybe_retire();
  }

  // As on_actor when the key's actor is resident; else `cold(ledger, request)` answers from the
  // ledger (no live lease without a resident actor), on the shard all the same.
  template <auto op, auto cold>
  static void read(Impl& impl, Shard& shard, ShardCall& call) {
    using Types = ActorOp<decltype(op)>;
    auto& request = *std::get_if<typename Types::RequestType>(&call.request);
    auto& reply = *std::get_if<Reply<typename Types::ResultType>>(&call.reply);
    if (ActorRef actor = shard.find(request.key)) {
      ((*actor).*op)(std::move(request), std::move(reply));
      actor->maybe_retire();
      return;
    }
    reply(cold(*impl.core.ledger, request));
  }

  // Recovers these rows (start-up's, or an adopted slot's) in one turn per shard, which first
  // runs `before(shard)`, and waits until the recovery writes are durable.
  template <typename Before>
  bool recover(SlotRows rows, Before before, std::string& error) {
    // Each turn's writes are handed to the ledger before the turn ends, and one flush makes them
    // all durable.
    std::vector<SlotRows> by_shard(core.shards.size());
    for (auto& row : rows) by_shard[core.shard_index(row.first)].push_back(std::move(row));
    std::latch turns(static_cast<std::ptrdiff_t>(core.shards.size()));
    for (std::size_t i = 0; i < core.shards.size(); ++i) {
      Shard& shard = *core.shards[i];
      shard.post([&shard, &turns, before, rows = std::move(by_shard[i])]() mutable {
        before(shard);
        for (auto& [key, loaded] : rows) {
          ActorRef actor = shard.actor(key);
          actor->recover(std::move(loaded));
          actor->maybe_retire();
        }
        shard.submit_staged();
        turns.count_down();
      });
    }
    turns.wait();
    core.ledger->flush();
    return core.ledger->healthy() || (error = "the ledger refused the recovery writes", false);
  }

  // Runs `fn()` on every shard and waits (at most `timeout`) until all have run it.
  template <typename Fn>
  bool on_every_shard(Fn fn, std::chrono::milliseconds timeout) {
    auto done = std::make_shared<TurnGate>();
    for (auto& shard : core.shards) {
      done->enter();
      shard->post([fn, done, &shard = *shard] {
        fn(shard);
        done->leave();
      });
    }
    return done->wait_idle(timeout);
  }
};

Engine::Burst::Burst(Engine& engine) : owns_(open_burst.engine == nullptr) {
  if (!owns_) return;
  open_burst.engine = engine.impl_.get();
  open_burst.calls.resize(engine.impl_->core.shards.size());
}

Engine::Burst::~Burst() {
  if (!owns_) return;
  Impl* engine = std::exchange(open_burst.engine, nullptr);
  engine->send_burst();
}

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
  options.checkpoint_every = config.checkpoint_every;
  options.checkpoint_ops = config.checkpoint_ops;
  storage::Status status;
  auto ledger = storage::Ledger::open(options, status);
  if (!ledger) {
    error = status.message();
    return nullptr;
  }
  return open(io, clock, std::move(config), std::move(ledger));
}

std::unique_ptr<Engine> Engine::open(boost::asio::io_context& io, const Clock& clock,
                                     EngineConfig config,
                                     std::unique_ptr<storage::LedgerStore> ledger) {
  if (!ledger->recovery_note().empty()) spdlog::warn("{}", ledger->recovery_note());
  config.limits.token_floor = ledger->token_floor();
  auto impl = std::make_unique<Impl>(io, clock, std::move(config), std::move(ledger));
  EventBus& bus = impl->core.bus;
  bus.published_through(impl->core.ledger->revision());
  impl->core.ledger->set_event_sink(
      [&bus](const std::vector<const Events*>& events) { bus.publish(events); });
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

bool Engine::start(std::string& error) {
  EngineCore& core = impl_->core;
  SlotRows rows;
  storage::Status status;
  // A cluster node recovers each slot's rows when it adopts the slot.
  if (!core.config.cluster) {
    status = core.ledger->scan_leases([&](std::string key, storage::LoadedState loaded) {
      rows.emplace_back(std::move(key), std::move(loaded));
    });
  }
  if (!status.ok()) {
    error = status.message();
    return false;
  }
  std::size_t loaded = rows.size();
  std::size_t corrupt = 0;
  for (const auto& row : rows) corrupt += row.second.corrupt ? 1 : 0;
  auto nothing_first = [](Shard&) {};
  if (!impl_->recover(std::move(rows), nothing_first, error)) return false;
  std::size_t compacted = 0;
  status = core.ledger->compact_history(core.clock.now(), compacted);
  if (!status.ok()) {
    error = "cannot compact the history: " + status.message();
    return false;
  }
  spdlog::info(
      "ledger recovered: revision {}, {} leases loaded, {} undecodable rows, {} old "
      "tenure records compacted",
      core.ledger->revision(), loaded, corrupt, compacted);
  return true;
}

bool Engine::adopt_slot(std::uint32_t slot, SlotRows rows, std::string& error) {
  // Actors of the slot still resident from an earlier tenure of it are stale: they go first.
  return impl_->recover(
      std::move(rows),
      [slot](Shard& shard) {
        shard.drop_slot(slot);
        shard.adopt_slot(slot);
      },
      error);
}

void Engine::drop_slot(std::uint32_t slot) {
  constexpr auto kPatience = std::chrono::seconds(10);
  if (!impl_->on_every_shard([slot](Shard& shard) { shard.drop_slot(slot); }, kPatience)) {
    spdlog::warn("slot {} not yet dropped by every shard", slot);
  }
}

void Engine::stop() {
  if (!impl_->requests.close()) return;
  EngineCore& core = impl_->core;
  constexpr auto kPatience = std::chrono::seconds(10);
  if (!impl_->requests.wait_idle(kPatience)) {
    spdlog::warn("stopping with {} requests not yet run", impl_->requests.open());
  }
  std::thread backup;
  {
    std::lock_guard lock(impl_->backup_mutex);
    backup = std::move(impl_->backup_thread);
  }
  if (backup.joinable()) backup.join();  // it reads the ledger, which closes below
  // Every admitted request has had its turn: the waiters queued now are all there will be.
  impl_->on_every_shard(
      [](Shard& shard) {
        for (ActorRef& actor : shard.actors()) {
          actor->shutdown();
          actor->maybe_retire();
        }
      },
      kPatience);
  if (!impl_->on_every_shard([](Shard& shard) { shard.stop_timer(); }, kPatience)) {
    spdlog::warn("stopping with shard timers still armed");
  }
  core.ledger->flush();
  core.ledger->stop();
  // Nothing hands out tickets any more; what is queued runs (or is dropped) and then nothing of
  // the engine is touched from the io threads, so the engine may be destroyed.
  if (!core.turns.wait_idle(kPatience)) {
    spdlog::warn("stopping with {} actor turns still queued", core.turns.open());
  }
}

void Engine::acquire(AcquireRequest request, Reply<AcquireResult> reply) {
  impl_->submit(protocol::Op::acquire, std::move(request), std::move(reply),
                &Impl::on_actor<&KeyActor::acquire>);
}

void Engine::renew(RenewRequest request, Reply<HolderResult> reply) {
  impl_->submit(protocol::Op::renew, std::move(request), std::move(reply),
                &Impl::on_actor<&KeyActor::renew>);
}

void Engine::release(ReleaseRequest request, Reply<HolderResult> reply) {
  impl_->submit(protocol::Op::release, std::move(request), std::move(reply),
                &Impl::on_actor<&KeyActor::release>);
}

void Engine::revoke(RevokeRequest request, Reply<HolderResult> reply) {
  if (!request.caller.admin) {
    if (!impl_->admit(protocol::Op::revoke, reply)) return;
    HolderResult result;
    result.error = Error{errc::forbidden, "revoke is for admin principals only"};
    reply(std::move(result));
    impl_->requests.leave();
    return;
  }
  impl_->submit(protocol::Op::revoke, std::move(request), std::move(reply),
                &Impl::on_actor<&KeyActor::revoke>);
}

void Engine::check(CheckRequest request, Reply<HolderResult> reply) {
  impl_->submit(protocol::Op::check, std::move(request), std::move(reply),
                &Impl::read<&KeyActor::check, &check_cold>);
}

void Engine::get(GetRequest request, Reply<GetResult> reply) {
  impl_->submit(protocol::Op::get, std::move(request), std::move(reply),
                &Impl::read<&KeyActor::get, &get_cold>);
}

void Engine::history(HistoryRequest request, Reply<HistoryResult> reply) {
  impl_->submit(protocol::Op::history, std::move(request), std::move(reply),
                &Impl::read<&KeyActor::history, &read_history>);
}

void Engine::list(ListRequest request, Reply<ListResult> reply) {
  if (!impl_->admit(protocol::Op::list, reply)) return;
  impl_->stamp(request.caller);
  reply(read_list(*impl_->core.ledger, request, request.caller.received_at));
  impl_->requests.leave();
}

void Engine::keepalive(KeepaliveRequest request, Reply<KeepaliveResult> reply) {
  if (!impl_->admit(protocol::Op::keepalive, reply)) return;
  impl_->send_open_burst();
  impl_->stamp(request.caller);
  EngineCore& core = impl_->core;
  // Every shard renews the owner's keys it holds through their actors; the last answer, of all
  // shards, replies for all. Each shard holds one count until it has sent its renewals, and the
  // request is counted in until every shard has.
  struct Tally {
    std::mutex mutex;
    std::size_t remaining;
    std::atomic<std::size_t> shards_to_run;
    KeepaliveResult result;
    Reply<KeepaliveResult> done;
  };
  auto tally = std::make_shared<Tally>();
  tally->remaining = core.shards.size();
  tally->shards_to_run = core.shards.size();
  tally->done = std::move(reply);
  auto count_one = [tally, &core](const HolderResult* r) {
    std::unique_lock lock(tally->mutex);
    if (r != nullptr) {
      if (!r->error && (r->status == HolderStatus::ok || r->status == HolderStatus::noop)) {
        tally->result.count++;
      }
      tally->result.revision = std::max(tally->result.revision, r->revision);
    }
    if (--tally->remaining > 0) return;
    if (tally->result.revision == 0) tally->result.revision = core.ledger->revision();
    lock.unlock();
    tally->done(std::move(tally->result));
  };
  for (auto& s : core.shards) {
    s->post([impl = impl_.get(), &shard = *s, request, tally, count_one] {
      std::vector<KeyActor*> actors = shard.owners().keys_of(request.owner);
      {
        std::lock_guard lock(tally->mutex);
        tally->remaining += actors.size();
      }
      for (KeyActor* actor : actors) {
        ActorRef held(actor);
        RenewRequest renew{std::string(actor->key()),
                           HolderParams{request.owner, std::nullopt, 0, false}, request.ttl_ms,
                           request.caller};
        renew.caller.admin = false;  // only the leases this principal acquired
        held->renew(std::move(renew), [count_one](HolderResult r) { count_one(&r); });
        held->maybe_retire();
      }
      count_one(nullptr);
      if (tally->shards_to_run.fetch_sub(1) == 1) impl->requests.leave();
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
  impl_->send_open_burst();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // One message per shard with that shard's keys.
  std::vector<std::vector<std::string>> by_shard(core.shards.size());
  for (std::string& key : keys) {
    by_shard[core.shard_index(key)].push_back(std::move(key));
  }
  for (std::size_t i = 0; i < by_shard.size(); ++i) {
    if (by_shard[i].empty()) continue;
    Shard& shard = *core.shards[i];
    shard.post([&shard, conn, keys = std::move(by_shard[i])] {
      for (const std::string& key : keys) {
        if (ActorRef actor = shard.find(key)) {
          actor->disconnect(conn);
          actor->maybe_retire();
        }
      }
    });
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

void Engine::fire_due_timers() {
  for (auto& s : impl_->core.shards) s->post([&shard = *s] { shard.fire_due(); });
}

EventBus& Engine::events() { return impl_->core.bus; }

storage::Status Engine::events_from(Revision from, std::size_t limit,
                                    std::vector<Event>& events) const {
  return impl_->core.ledger->events_from(from, limit, events);
}

void Engine::backup(BackupRequest request, Reply<BackupResult> reply) {
  Impl& impl = *impl_;
  BackupResult refused;
  refused.dir = request.dir;
  if (!impl.requests.enter()) {
    refused.error = Error{errc::unavailable, "the server is shutting down"};
    reply(std::move(refused));
    return;
  }
  std::unique_lock lock(impl.backup_mutex);
  if (impl.backing_up) {
    lock.unlock();
    impl.requests.leave();
    refused.error =
        Error{errc::too_many_requests, "a backup is being taken; ask again once it is done"};
    reply(std::move(refused));
    return;
  }
  if (impl.backup_thread.joinable()) impl.backup_thread.join();  // done: it cleared backing_up
  impl.backing_up = true;
  impl.backup_thread = std::thread([&impl, dir = std::move(request.dir), reply = std::move(reply)] {
    name_this_thread("backup");
    BackupResult result;
    result.dir = dir;
    result.revision = impl.core.ledger->revision();
    if (storage::Status status = impl.core.ledger->backup(dir); !status.ok()) {
      result.error = Error{errc::unavailable, "cannot back up the ledger: " + status.message()};
    }
    {
      std::lock_guard done(impl.backup_mutex);
      impl.backing_up = false;
    }
    reply(std::move(result));
    impl.requests.leave();
  });
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
  for (const auto& shard : core.shards) s.resident_keys += shard->resident();
  s.waiters = static_cast<std::uint64_t>(std::max<std::int64_t>(core.counters.waiters, 0));
  s.expired = core.counters.expired.load();
  s.pending_turns = core.turns.open();
  for (const auto& shard : core.shards) s.shard_posts += shard->posts();
  for (std::size_t i = 0; i < s.ops.size(); ++i) s.ops[i] = core.counters.ops[i].load();
  for (std::size_t i = 0; i < s.expiry_lateness_ms_log2.size(); ++i) {
    s.expiry_lateness_ms_log2[i] = core.counters.expiry_lateness_ms_log2[i].load();
  }
  s.expiry_lateness_ms_sum = core.counters.expiry_lateness_ms_sum.load();
  s.writer = core.ledger->stats();
  s.healthy = core.ledger->healthy();
  return s;
}

}  // namespace tenure
