// Storage-level measurements, hidden from the normal runs (tag [.]): run them by name, e.g.
//   build/tests/unit/unit_tests "[.ledger_bench]" -s
// Sizes come from the environment so that a quick run and a full one use the same code:
//   TENURE_BENCH_CLIENTS (50), TENURE_BENCH_SECONDS (5), TENURE_BENCH_ROWS (1000000).
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "storage/codec.hpp"
#include "storage/ledger.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tenure;
using namespace tenure::storage;
using SteadyClock = std::chrono::steady_clock;

namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::strtoull(value, nullptr, 10) : fallback;
}

double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// An acquire as the engine writes it: the lease row and its event.
WriteOp acquire_op(std::string key, Token token) {
  WriteOp op;
  op.key = std::move(key);
  KeyState state;
  state.lease = Lease{};
  state.lease->owner = "bench-owner";
  state.lease->token = token;
  state.lease->acquired_at = 1'000;
  state.lease->expires_at = 3'600'000;
  state.lease->ttl_ms = 3'600'000;
  state.last_token = token;
  op.row = encode_state(state);
  Event event;
  event.type = EventType::acquired;
  event.key = op.key;
  event.owner = "bench-owner";
  event.token = token;
  event.at = 1'000;
  op.events.push_back(std::move(event));
  return op;
}

std::unique_ptr<Ledger> open_ledger(const LedgerOptions& options) {
  Status status;
  auto ledger = Ledger::open(options, status);
  INFO(status.message());
  REQUIRE(ledger);
  return ledger;
}

}  // namespace

TEST_CASE("group commit throughput of one-op groups from many waiting clients", "[.ledger_bench]") {
  test::TempDir dir;
  LedgerOptions options;
  options.path = dir.str("ledger");
  options.sync = env_or("TENURE_BENCH_SYNC", 1) != 0;
  auto ledger = open_ledger(options);
  GroupWriter& writer = ledger->writer();
  const std::uint64_t clients = env_or("TENURE_BENCH_CLIENTS", 50);
  const auto duration = std::chrono::seconds(env_or("TENURE_BENCH_SECONDS", 5));
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> done_ops{0}, refused{0};
  WriterStats before = writer.stats();
  auto start = SteadyClock::now();
  std::vector<std::thread> threads;
  for (std::uint64_t c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      std::mutex mutex;
      std::condition_variable cv;
      for (Token token = 1; !stop.load(); ++token) {
        bool finished = false;
        std::vector<WriteOp> ops;
        ops.push_back(acquire_op("bench/" + std::to_string(c), token));
        writer.submit(std::move(ops), [&](bool ok, std::vector<WriteOp>& written) {
          if (!ok) {
            refused.fetch_add(1);
            for (std::size_t i = 0; i < written.size(); ++i) writer.refusal_settled();
          }
          std::lock_guard lock(mutex);
          finished = true;
          cv.notify_one();
        });
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return finished; });
        done_ops.fetch_add(1);
      }
    });
  }
  std::this_thread::sleep_for(duration);
  stop = true;
  for (auto& t : threads) t.join();
  double elapsed = seconds_since(start);
  WriterStats after = writer.stats();
  std::uint64_t batches = after.batches - before.batches;
  std::uint64_t syncs = after.syncs - before.syncs;
  WARN(clients << " clients, sync=" << options.sync << ": " << done_ops.load() / elapsed
               << " ops/s, " << batches << " batches, " << syncs << " syncs, "
               << (syncs ? double(done_ops.load()) / double(syncs) : 0.0) << " ops per sync, "
               << "mean write+sync " << (batches ? after.write_us_sum / batches : 0) << " us");
  CHECK(refused.load() == 0);
}

TEST_CASE("reopen and scan a ledger of many live leases", "[.ledger_bench]") {
  test::TempDir dir;
  LedgerOptions options;
  options.path = dir.str("ledger");
  options.sync = false;
  const std::uint64_t rows = env_or("TENURE_BENCH_ROWS", 1'000'000);
  {
    auto ledger = open_ledger(options);
    constexpr std::uint64_t kGroup = 1000;
    auto start = SteadyClock::now();
    for (std::uint64_t i = 0; i < rows; i += kGroup) {
      std::vector<WriteOp> ops;
      for (std::uint64_t k = i; k < std::min(rows, i + kGroup); ++k) {
        ops.push_back(acquire_op("live/" + std::to_string(k), 1));
      }
      ledger->writer().submit(std::move(ops), [](bool ok, std::vector<WriteOp>&) { CHECK(ok); });
    }
    ledger->writer().flush();
    WARN("wrote " << rows << " leases in " << seconds_since(start) << " s");
  }
  options.sync = true;
  auto start = SteadyClock::now();
  auto ledger = open_ledger(options);
  double opened = seconds_since(start);
  std::uint64_t seen = 0;
  Status status = ledger->scan_leases(
      [&](std::string, LoadedState loaded) { seen += loaded.state.lease ? 1 : 0; });
  double scanned = seconds_since(start) - opened;
  REQUIRE(status.ok());
  CHECK(seen == rows);
  WARN("reopened in " << opened << " s, scanned " << seen << " leases in " << scanned << " s");
}
