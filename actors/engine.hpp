#pragma once
// The lease engine: per-key actors, owned by shards, over the RocksDB ledger. Every operation is
// a message to its key's shard, which runs the key's actor; the reply is called once the change
// it reports is durable (§6), on the shard's strand or the ledger's commit thread, so callers
// post it to their own executor.
// Replies to requests on one key are called in request order.
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "actors/event_bus.hpp"
#include "actors/requests.hpp"
#include "actors/watch.hpp"
#include "core/clock.hpp"
#include "protocol/ops.hpp"
#include "storage/group_writer.hpp"
#include "storage/ledger.hpp"
#include "storage/ledger_store.hpp"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace tenure {

struct EngineConfig {
  std::string data_dir;  // the RocksDB directory
  bool sync = true;
  Limits limits;
  std::size_t history_keep = 1000;
  Millis history_max_age = 30LL * 86'400'000;
  std::uint64_t events_keep = 1'000'000;
  std::size_t shards = 4;  // tenured: one per io thread (--shards)
  // Keys without a lease, waiter or write that stay resident (in all shards), the least recently
  // used going first: a key taken again soon needs no ledger read.
  std::size_t idle_keys = 65'536;
  // Deadlines a shard serves per turn; the rest follow in a new turn once the ledger has taken
  // this one (BacklogPacer), behind the requests that came meanwhile, so an expiry storm cannot
  // starve them (§4). Smaller batches keep a request's turn and its commit from queueing behind
  // much of a storm; too small, and the paced batches fall behind the storm (docs/benchmarks.md,
  // "smaller expiry batches").
  std::size_t expiry_batch = 256;
  rocksdb::Env* ledger_env = nullptr;  // tests only: the file system under the ledger
  storage::OpenMode open_mode = storage::OpenMode::normal;  // --recover, --restore-from
  Revision revision_floor = 0;                              // --revision-floor
  bool skip_verify = false;  // tests: skip the start-up check of the table files
  // Tests on a MockClock: shard timers fire only through fire_due_timers(), never by themselves.
  bool manual_timers = false;
  // How often the ledger checkpoints its rows (storage::LedgerOptions): --checkpoint-every,
  // --checkpoint-ops.
  std::chrono::milliseconds checkpoint_every{1000};
  std::uint64_t checkpoint_ops = 65'536;
  // Cluster mode: the engine serves only the keys of the slots it adopted (adopt_slot); requests
  // on other keys are answered `unavailable`.
  bool cluster = false;
};

// Told when leases bound to a connection are lost (expired or revoked) while it is open: the
// events of one commit of one shard come in one call, in commit order. A `renewed` event among
// them: the lease was re-acquired on another connection, which is told of its loss from then on.
class ConnectionListener {
 public:
  virtual ~ConnectionListener() = default;
  virtual void on_lost(std::vector<Event> events) = 0;
  // Cluster mode: the slot of these tenures bound to the connection went to another node, which
  // does not know the connection: this engine tells it of their loss no more. Any thread.
  virtual void on_unowned(std::vector<BoundTenure> /*tenures*/) {}
};

struct EngineStats {
  Revision revision = 0;
  Revision oldest_revision = 0;
  std::uint64_t live_leases = 0;
  std::uint64_t resident_keys = 0;
  std::uint64_t waiters = 0;
  std::uint64_t expired = 0;
  std::uint64_t pending_turns = 0;  // actor turns queued and shard timers armed
  std::uint64_t shard_posts = 0;    // messages posted to shards (requests, bursts, commits)
  std::array<std::uint64_t, protocol::kEngineOpCount> ops{};  // by protocol::Op
  std::array<std::uint64_t, 16> expiry_lateness_ms_log2{};
  std::uint64_t expiry_lateness_ms_sum = 0;
  storage::WriterStats writer;
  bool healthy = true;
};

class Engine {
 public:
  // While a Burst of this engine is open on a thread, the requests made on that thread go to
  // their shards when it closes, in order, as one message per shard instead of one per request
  // (keepalive and disconnect send what it holds first, so every shard still sees a thread's
  // requests in the order they were made). A session opens one around the requests of one read.
  // Close it before waiting for any reply: the requests it holds have not started.
  class Burst {
   public:
    explicit Burst(Engine& engine);
    ~Burst();
    Burst(const Burst&) = delete;
    Burst& operator=(const Burst&) = delete;

   private:
    bool owns_;  // the outermost burst on this thread, the one that sends
  };

  // Opens the ledger in config.data_dir; null with `error` set on failure.
  static std::unique_ptr<Engine> open(boost::asio::io_context& io, const Clock& clock,
                                      EngineConfig config, std::string& error);
  // Runs on a ledger opened elsewhere (a cluster's); config.data_dir and the ledger options in
  // config are not used.
  static std::unique_ptr<Engine> open(boost::asio::io_context& io, const Clock& clock,
                                      EngineConfig config,
                                      std::unique_ptr<storage::LedgerStore> ledger);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Recovery: expires leases whose time passed while down, releases connection-bound leases,
  // arms timers for the rest. Blocks until that is durable. Needs io threads running. A cluster
  // node recovers nothing here: each slot's rows when it adopts the slot.
  bool start(std::string& error);
  // Refuses new work, answers waiters `unavailable`, drains in-flight writes, closes the ledger,
  // and waits until no queued turn of the engine is left on the io threads (they must run).
  void stop();

  // Cluster mode (config.cluster). A slot's ledger rows, as the ledger's scan of it gives them.
  using SlotRows = std::vector<std::pair<std::string, storage::LoadedState>>;
  // Takes `slot` over with all of its rows: recovers them as start() does (expires what is
  // overdue, releases connection-bound leases, arms timers from the persisted deadlines) and
  // serves the slot's keys from then on. Blocks until the recovery writes are durable; false,
  // with `error`, if the ledger refused them.
  // REQUIRES: not on an io thread; the io threads run.
  bool adopt_slot(std::uint32_t slot, SlotRows rows, std::string& error);
  // Gives `slot` up, writing nothing: its keys' actors and timers go, their waiters and later
  // requests on its keys are answered `unavailable` (the key moved; retry). Replies waiting for
  // a write in flight get its outcome. Blocks until every shard has let go.
  // REQUIRES: as adopt_slot.
  void drop_slot(std::uint32_t slot);

  void acquire(AcquireRequest request, Reply<AcquireResult> reply);
  void renew(RenewRequest request, Reply<HolderResult> reply);
  void release(ReleaseRequest request, Reply<HolderResult> reply);
  void revoke(RevokeRequest request, Reply<HolderResult> reply);
  void check(CheckRequest request, Reply<HolderResult> reply);
  void get(GetRequest request, Reply<GetResult> reply);
  void keepalive(KeepaliveRequest request, Reply<KeepaliveResult> reply);
  void list(ListRequest request, Reply<ListResult> reply);
  void history(HistoryRequest request, Reply<HistoryResult> reply);

  // Connections: a new id to put in Caller::conn, and its end, which releases its
  // release_on_disconnect leases and drops its waiters on `keys`.
  ConnId connect(std::weak_ptr<ConnectionListener> listener);
  void disconnect(ConnId conn, std::vector<std::string> keys);

  // Starts a watch (§3): events matching `filter` go to `sink`, replayed from `from` first when
  // given. `current` is set to the server's revision for the `watching` reply.
  std::shared_ptr<Watch> watch(WatchFilter filter, std::optional<Revision> from,
                               std::weak_ptr<WatchSink> sink, Revision& current);
  void unwatch(const std::shared_ptr<Watch>& watch);

  // Fires every timer that is due by the clock now (the timers do this by themselves; tests on
  // a MockClock call it after advancing the clock).
  void fire_due_timers();

  EventBus& events();
  storage::Status events_from(Revision from, std::size_t limit, std::vector<Event>& events) const;
  // An online, consistent copy of the ledger in `dir`, which must not exist, read through before
  // it is reported (see Ledger::backup). Runs on a thread of its own, one backup at a time: a
  // big ledger takes seconds to read. The reply comes from that thread.
  void backup(BackupRequest request, Reply<BackupResult> reply);
  bool healthy() const;
  Revision revision() const;
  Revision oldest_revision() const;
  EngineStats stats() const;
  const Clock& clock() const;
  const EngineConfig& config() const;

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenure
