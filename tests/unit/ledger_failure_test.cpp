// A failing disk: the engine refuses writes (`unavailable`) and acknowledges nothing unwritten.
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <latch>
#include <stdexcept>
#include <thread>

#include "storage/ledger.hpp"
#include "tests/support/wrapped_fs.hpp"
#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

namespace {

std::atomic<bool> disk_full{false};

class FullDiskFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (disk_full) return rocksdb::IOStatus::NoSpace("test: disk full");
    return FSWritableFileOwnerWrapper::Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    if (disk_full) return rocksdb::IOStatus::NoSpace("test: disk full");
    return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (disk_full) return rocksdb::IOStatus::NoSpace("test: disk full");
    return FSWritableFileOwnerWrapper::Sync(options, dbg);
  }
};

// Waits until the ledger takes writes again (it retries once a second).
bool wait_healthy(Engine& engine) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!engine.healthy() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return engine.healthy();
}

struct FullDiskEnv {
  std::shared_ptr<rocksdb::FileSystem> fs = std::make_shared<test::WrappedFileSystem>(
      rocksdb::FileSystem::Default(),
      [](const std::string&, std::unique_ptr<rocksdb::FSWritableFile> file)
          -> std::unique_ptr<rocksdb::FSWritableFile> {
        return std::make_unique<FullDiskFile>(std::move(file));
      });
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  FullDiskEnv() { disk_full = false; }
  ~FullDiskEnv() { disk_full = false; }
  EngineConfig config() const {
    EngineConfig config;
    config.ledger_env = env.get();
    return config;
  }
};

// A real ledger whose reads can be made to fail, as an etcd ledger's do while etcd is away or a
// write's outcome is not known yet, and whose backups run `before_backup` first.
class ControlledLedger : public storage::LedgerStore {
 public:
  ControlledLedger(
      std::unique_ptr<storage::Ledger> ledger, const std::atomic<bool>& unreadable,
      std::function<void()> before_backup = [] {})
      : ledger_(std::move(ledger)),
        unreadable_(unreadable),
        before_backup_(std::move(before_backup)) {}

  storage::Status load(std::string_view key, storage::LoadedState& loaded) const override {
    if (unreadable_) return storage::Status(storage::errc::io_error, "test: cannot read");
    return ledger_->load(key, loaded);
  }
  storage::Status scan_leases(
      const std::function<void(std::string, storage::LoadedState)>& visit) const override {
    return ledger_->scan_leases(visit);
  }
  storage::Status list(std::string_view prefix, std::string_view after, std::size_t limit,
                       Millis now, std::vector<storage::LeaseRow>& rows,
                       bool& more) const override {
    return ledger_->list(prefix, after, limit, now, rows, more);
  }
  storage::Status history(std::string_view key, Token before, std::size_t limit,
                          std::vector<TenureRecord>& records, bool& more) const override {
    return ledger_->history(key, before, limit, records, more);
  }
  storage::Status events_from(Revision from, std::size_t limit,
                              std::vector<Event>& events) const override {
    return ledger_->events_from(from, limit, events);
  }
  storage::Status compact_history(Millis now, std::size_t& dropped) override {
    return ledger_->compact_history(now, dropped);
  }
  storage::Status backup(const std::string& dir) const override {
    before_backup_();
    return ledger_->backup(dir);
  }
  void submit(std::vector<storage::WriteOp> ops, storage::CommitDone done) override {
    ledger_->submit(std::move(ops), std::move(done));
  }
  void refusal_settled() override { ledger_->refusal_settled(); }
  void set_event_sink(storage::EventSink sink) override {
    ledger_->set_event_sink(std::move(sink));
  }
  void flush() override { ledger_->flush(); }
  void stop() override { ledger_->stop(); }
  bool healthy() const override { return ledger_->healthy(); }
  Revision revision() const override { return ledger_->revision(); }
  Revision oldest_revision() const override { return ledger_->oldest_revision(); }
  Token token_floor() const override { return ledger_->token_floor(); }
  const std::string& recovery_note() const override { return ledger_->recovery_note(); }
  storage::WriterStats stats() const override { return ledger_->stats(); }
  std::string last_error() const override { return ledger_->last_error(); }

 private:
  std::unique_ptr<storage::Ledger> ledger_;
  const std::atomic<bool>& unreadable_;
  std::function<void()> before_backup_;
};

// Opens the engine's ledger in a ControlledLedger.
EngineFixture::OpenLedger controlled(
    const std::atomic<bool>& unreadable, std::function<void()> before_backup = [] {}) {
  return [&unreadable, before_backup](const EngineConfig& c) {
    storage::LedgerOptions options;
    options.path = c.data_dir;
    options.env = c.ledger_env;
    storage::Status status;
    auto ledger = storage::Ledger::open(options, status);
    if (!ledger) throw std::runtime_error(status.message());
    return std::make_unique<ControlledLedger>(std::move(ledger), unreadable, before_backup);
  };
}

BackupResult backup(Engine& engine, const std::string& dir) {
  std::promise<BackupResult> done;
  engine.backup(BackupRequest{dir, {}}, [&](BackupResult r) { done.set_value(std::move(r)); });
  return done.get_future().get();
}

}  // namespace

TEST_CASE("a full disk refuses writes, acknowledges nothing unwritten, and resumes by itself",
          "[failure]") {
  FullDiskEnv disk;
  EngineFixture f(disk.config());
  auto held = f.acquire("kept", "a", 60'000);
  REQUIRE(held.status == AcquireStatus::acquired);
  Revision durable = f.engine().revision();

  disk_full = true;
  auto refused = f.acquire("lost", "a", 60'000);
  REQUIRE(refused.error);
  CHECK(refused.error->code == errc::unavailable);
  CHECK(refused.error->message.find("disk full") != std::string::npos);
  CHECK_FALSE(f.engine().healthy());
  // Later writes are refused too, reads still answer.
  CHECK(f.release("kept", "a").error->code == errc::unavailable);
  CHECK(f.acquire("other", "b").error->code == errc::unavailable);
  CHECK(f.get("kept").lease);
  CHECK(f.engine().revision() == durable);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a retry or two, still full
  CHECK_FALSE(f.engine().healthy());

  disk_full = false;
  REQUIRE(wait_healthy(f.engine()));
  CHECK(f.get("kept").lease);
  CHECK_FALSE(f.get("lost").lease);
  CHECK(f.get("lost").last_token == 0);
  auto again = f.acquire("lost", "a", 60'000);
  REQUIRE(again.status == AcquireStatus::acquired);
  CHECK(again.lease->token == 1);
  CHECK(again.revision == durable + 1);
  CHECK(f.release("kept", "a").status == HolderStatus::ok);

  f.reopen();
  CHECK(f.engine().revision() == durable + 2);
  CHECK(f.get("lost").lease);
  CHECK_FALSE(f.get("kept").lease);
}

TEST_CASE("the owner index follows durability: a refused acquire leaves nothing to keep alive",
          "[failure]") {
  FullDiskEnv disk;
  EngineConfig config = disk.config();
  config.idle_keys = 0;  // the refused keys' actors retire at once
  EngineFixture f(config);
  REQUIRE(f.acquire("held", "a", 60'000).status == AcquireStatus::acquired);
  disk_full = true;
  REQUIRE(f.acquire("phantom", "a", 60'000).error);
  CHECK(f.engine().stats().live_leases == 1);
  REQUIRE(f.release("held", "a").error);
  CHECK(f.engine().stats().live_leases == 1);
  disk_full = false;
  REQUIRE(wait_healthy(f.engine()));
  // Let the refused keys' actors go (nothing holds them); the index must not point at them.
  for (int i = 0; i < 100 && f.engine().stats().resident_keys > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto kept = f.keepalive("a", 30'000);
  REQUIRE_FALSE(kept.error);
  CHECK(kept.count == 1);  // "held": its release was refused, so it is still held
  CHECK(f.engine().stats().live_leases == 1);
  CHECK(f.get("held").lease);
  CHECK_FALSE(f.get("phantom").lease);
}

TEST_CASE("an undecodable row frees its key with a token above any it had", "[failure]") {
  EngineFixture f;
  f.acquire("bad", "a");
  f.release("bad", "a");
  f.acquire("other", "a");
  f.close();
  // Overwrite the row with garbage through RocksDB itself, behind the engine's back.
  test::put_raw(f.data_dir(), 1, "bad", "\x01\xff\xff");
  f.open();
  auto g = f.get("bad");
  CHECK_FALSE(g.lease);
  CHECK(g.last_token >= 1);
  auto r = f.acquire("bad", "b");
  REQUIRE(r.status == AcquireStatus::acquired);
  CHECK(r.lease->token > 1);
}

TEST_CASE("a lease whose key could not be read when it fell due still ends by its timer",
          "[failure]") {
  FullDiskEnv disk;
  std::atomic<bool> unreadable{false};
  EngineConfig config = disk.config();
  config.manual_timers = true;  // the shard's timer fires when the test says so
  EngineFixture f(config, nullptr, controlled(unreadable));
  REQUIRE(f.acquire("k", "a", 5000).status == AcquireStatus::acquired);

  // A refused renew leaves memory ahead of the ledger: the key is read back a second later.
  disk_full = true;
  REQUIRE(f.renew("k", "a", 60'000).error);
  disk_full = false;
  REQUIRE(wait_healthy(f.engine()));
  // That read fails.
  unreadable = true;
  f.clock().advance(1000);
  f.expire_due();
  REQUIRE(f.get("k").error);  // the key's turn came and went: it cannot be read
  unreadable = false;

  // Nobody asks about the key again; its lease (5 s, the renew was not written) ends on time.
  f.clock().advance(4000);
  f.expire_due();
  REQUIRE(test::eventually([&] { return f.engine().stats().expired == 1; }));
  CHECK(f.history("k").tenures.at(0).end == EndReason::expired);
}

TEST_CASE("a lease read back after a refused write still tells its connection of its loss",
          "[failure]") {
  FullDiskEnv disk;
  EngineConfig config = disk.config();
  config.manual_timers = true;
  EngineFixture f(config);
  auto listener = std::make_shared<test::LostListener>();
  auto lost = listener->lost.get_future();
  ConnId conn = f.engine().connect(listener);
  REQUIRE(f.acquire_on("k", "a", 5000, conn).status == AcquireStatus::acquired);

  SECTION("a renew refused") {
    // The key is read back from the ledger a second later, at its next turn.
    disk_full = true;
    REQUIRE(f.renew("k", "a", 60'000).error);
    disk_full = false;
    REQUIRE(wait_healthy(f.engine()));
    f.clock().advance(1000);
    f.expire_due();
    REQUIRE(f.get("k").lease);
    f.clock().advance(4000);
  }
  SECTION("its expiry refused") {
    disk_full = true;
    f.clock().advance(5000);
    f.expire_due();
    REQUIRE(test::eventually([&] { return !f.engine().healthy(); }));  // the expiry was refused
    disk_full = false;
    REQUIRE(wait_healthy(f.engine()));
    REQUIRE(lost.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
    f.clock().advance(1000);  // read back, and ended again
  }
  f.expire_due();
  REQUIRE(lost.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  Event event = lost.get();
  CHECK(event.type == EventType::expired);
  CHECK(event.key == "k");
}

TEST_CASE("a backup runs on a thread of its own, one at a time, and a stop waits for it",
          "[failure]") {
  std::atomic<bool> unreadable{false};
  std::latch started(1), go_on(1);
  EngineFixture f({}, nullptr, controlled(unreadable, [&] {
                    started.count_down();
                    go_on.wait();
                  }));
  REQUIRE(f.acquire("k", "a", 60'000).status == AcquireStatus::acquired);
  Revision before = f.engine().revision();
  test::TempDir to;
  std::promise<BackupResult> first;
  f.engine().backup(BackupRequest{to.str("first"), {}},
                    [&](BackupResult r) { first.set_value(std::move(r)); });
  started.wait();
  // While it is held: the engine serves, and a second backup is refused.
  CHECK(f.acquire("other", "a", 60'000).status == AcquireStatus::acquired);
  BackupResult second = backup(f.engine(), to.str("second"));
  REQUIRE(second.error);
  CHECK(second.error->code == errc::too_many_requests);
  CHECK_FALSE(std::filesystem::exists(to.str("second")));
  // A stop waits for the backup, which reads the ledger it would close.
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    f.close();
    closed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_FALSE(closed);
  go_on.count_down();
  BackupResult made = first.get_future().get();
  closer.join();
  REQUIRE_FALSE(made.error);
  CHECK(made.revision >= before);
  CHECK(std::filesystem::exists(to.str("first") + "/CURRENT"));
  CHECK(storage::Ledger::check_backup(to.str("first")).ok());
}
