#pragma once
// A real engine on a real RocksDB in a temp dir, driven by a MockClock (or the system clock),
// with blocking helpers so tests read like the protocol.
#include <rocksdb/db.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/engine.hpp"
#include "tests/support/temp_dir.hpp"

namespace tenure::test {

// A connection's listener: the first `lost` notice it is told.
struct LostListener : ConnectionListener {
  std::promise<Event> lost;
  void on_lost(std::vector<Event> events) override { lost.set_value(events.at(0)); }
};

template <typename Result, typename Request>
Result call(Engine& engine, void (Engine::*op)(Request, Reply<Result>), Request request) {
  auto promise = std::make_shared<std::promise<Result>>();
  auto future = promise->get_future();
  (engine.*op)(std::move(request), [promise](Result r) { promise->set_value(std::move(r)); });
  return future.get();
}

// Polls `done` for up to 10 s: the engine's work ends on its own threads.
template <typename Pred>
bool eventually(Pred done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// The column families of a ledger, for opening it with RocksDB itself in a test.
std::vector<rocksdb::ColumnFamilyDescriptor> ledger_families();
// Opens the closed ledger at `dir` with RocksDB itself, runs `look` on it and its column
// families (in ledger_families()'s order), and closes it. Throws if any of it fails.
void with_raw_ledger(const std::string& dir,
                     const std::function<rocksdb::Status(
                         rocksdb::DB&, const std::vector<rocksdb::ColumnFamilyHandle*>&)>& look);
// Puts `value` at `key` of the column family `family` (as in ledger_families()) of a closed
// ledger, through RocksDB itself, behind the engine's back.
void put_raw(const std::string& dir, std::size_t family, const std::string& key,
             const std::string& value);

class EngineFixture {
 public:
  // Opens the ledger the engine runs on, in the fixture's data dir; if empty, Engine::open opens
  // its own there.
  using OpenLedger = std::function<std::unique_ptr<storage::LedgerStore>(const EngineConfig&)>;

  explicit EngineFixture(EngineConfig config = {}, const Clock* clock = nullptr,
                         OpenLedger open_ledger = {});
  ~EngineFixture();

  Engine& engine() { return *engine_; }
  MockClock& clock() { return mock_; }
  const std::string& data_dir() const { return config_.data_dir; }
  // Takes effect at the next open().
  EngineConfig& config() { return config_; }

  // Stops the engine and opens it again on the same data dir (a clean restart).
  void reopen();
  void close();
  void open();

  AcquireResult acquire(const std::string& key, const std::string& owner,
                        std::optional<Millis> ttl = 1000, Millis wait_ms = 0,
                        Millis lock_delay_ms = 0, Principal principal = 1000);
  AcquireResult acquire_open_ended(const std::string& key, const std::string& owner);
  // Acquires on the connection `conn` (Engine::connect), which is then told of the lease's loss.
  AcquireResult acquire_on(const std::string& key, const std::string& owner, Millis ttl,
                           ConnId conn);
  // Acquires `prefix`0 .. `prefix`(n-1) all at once, each without waiting for the one before,
  // and returns once every reply is in (in reply order).
  std::vector<AcquireResult> acquire_burst(const std::string& prefix, int n, Millis ttl = 1000);
  HolderResult renew(const std::string& key, const std::string& owner,
                     std::optional<Millis> ttl = std::nullopt,
                     std::optional<Token> token = std::nullopt, Principal principal = 1000);
  HolderResult release(const std::string& key, const std::string& owner,
                       std::optional<Token> token = std::nullopt, Principal principal = 1000);
  HolderResult revoke(const std::string& key);
  HolderResult check(const std::string& key, Token token,
                     std::optional<std::string> owner = std::nullopt);
  GetResult get(const std::string& key);
  KeepaliveResult keepalive(const std::string& owner, std::optional<Millis> ttl = std::nullopt);
  HistoryResult history(const std::string& key, std::size_t limit = 100, Token before = 0);
  ListResult list(const std::string& prefix, std::size_t limit = 100,
                  const std::string& after = "");

  // Fires the timers due by the clock. A later request on a key runs after the turn its timer
  // started (one strand per key), so a `get` of the key is the barrier.
  void expire_due();

  Caller caller(Principal principal = 1000) const;

 private:
  TempDir dir_;
  MockClock mock_;
  const Clock* clock_;
  EngineConfig config_;
  OpenLedger open_ledger_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace tenure::test
