// Lease and tenure rows are written at checkpoints; between two, the events' journals are their
// only durable copy (see GroupWriter). A crash there loses nothing acknowledged, reads see what
// no checkpoint has written yet, and a journal that cannot be read is damage (§6).
#include <rocksdb/db.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "storage/codec.hpp"
#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;
namespace fs = std::filesystem;

namespace {

// No checkpoint but the one at a clean stop.
EngineConfig rare_checkpoints() {
  EngineConfig config;
  config.checkpoint_every = std::chrono::hours(1);
  return config;
}

// What a kill -9 leaves: the ledger and its marks as they are on disk now (every write is
// synced), put in place of the open ones once the engine has stopped.
class CrashImage {
 public:
  explicit CrashImage(EngineFixture& f) : f_(f), dir_(f.data_dir()) {
    fs::copy(dir_, dir_ + ".crash", fs::copy_options::recursive);
    fs::copy(dir_ + ".marks", dir_ + ".marks.crash");
  }
  // Stops the engine and leaves the image in place of its files.
  void restore() {
    f_.close();
    fs::remove_all(dir_);
    fs::remove(dir_ + ".marks");
    fs::rename(dir_ + ".crash", dir_);
    fs::rename(dir_ + ".marks.crash", dir_ + ".marks");
  }

 private:
  EngineFixture& f_;
  std::string dir_;
};

}  // namespace

TEST_CASE("a crash between checkpoints loses nothing acknowledged", "[checkpoint]") {
  EngineFixture f(rare_checkpoints());
  for (int round = 0; round < 3; ++round) {
    REQUIRE(f.acquire("cp/ended", "a", 600'000).status == AcquireStatus::acquired);
    REQUIRE(f.release("cp/ended", "a").status == HolderStatus::ok);
  }
  for (int i = 0; i < 50; ++i) {
    REQUIRE(f.acquire("cp/" + std::to_string(i), "b", 600'000).status == AcquireStatus::acquired);
  }
  REQUIRE(f.renew("cp/7", "b", 900'000).status == HolderStatus::ok);
  Revision revision = f.engine().revision();
  CrashImage crash(f);
  crash.restore();
  f.open();

  CHECK(f.engine().revision() == revision);
  auto held = f.list("cp/", 100);
  REQUIRE_FALSE(held.error);
  CHECK(held.leases.size() == 50);
  auto renewed = f.get("cp/7");
  REQUIRE(renewed.lease);
  CHECK(renewed.lease->owner == "b");
  CHECK(renewed.lease->ttl_ms == 900'000);
  auto history = f.history("cp/ended");
  REQUIRE(history.tenures.size() == 3);
  CHECK(history.tenures[0].token == 3);
  CHECK(history.tenures[2].token == 1);
  // last_token survived: the next tenure does not reissue a token.
  auto again = f.acquire("cp/ended", "c");
  REQUIRE(again.status == AcquireStatus::acquired);
  CHECK(again.lease->token == 4);
  CHECK(f.acquire("cp/3", "c").status == AcquireStatus::held);
}

TEST_CASE("reads see rows and tenures that no checkpoint has written yet", "[checkpoint]") {
  EngineFixture f(rare_checkpoints());
  for (int i = 0; i < 5; ++i) {
    REQUIRE(f.acquire("rd/" + std::to_string(i), "a", 600'000).status == AcquireStatus::acquired);
  }
  f.reopen();  // a clean stop checkpoints: the rows say held
  REQUIRE(f.release("rd/1", "a").status == HolderStatus::ok);
  REQUIRE(f.release("rd/3", "a").status == HolderStatus::ok);
  REQUIRE(f.acquire("rd/3", "b", 600'000).status == AcquireStatus::acquired);
  REQUIRE(f.acquire("rd/9", "b", 600'000).status == AcquireStatus::acquired);

  auto page = f.list("rd/", 3);
  REQUIRE_FALSE(page.error);
  REQUIRE(page.leases.size() == 3);
  CHECK(page.leases[0].key == "rd/0");
  CHECK(page.leases[1].key == "rd/2");
  CHECK(page.leases[2].key == "rd/3");
  CHECK(page.leases[2].lease.owner == "b");
  CHECK(page.next);
  auto rest = f.list("rd/", 10, "rd/3");
  REQUIRE(rest.leases.size() == 2);
  CHECK(rest.leases[0].key == "rd/4");
  CHECK(rest.leases[1].key == "rd/9");

  auto history = f.history("rd/3");
  REQUIRE(history.tenures.size() == 2);
  CHECK(history.tenures[0].owner == "b");
  CHECK_FALSE(history.tenures[0].ended_at);
  CHECK(history.tenures[1].owner == "a");
  CHECK(history.tenures[1].end == EndReason::released);
  auto freed = f.history("rd/1");
  REQUIRE(freed.tenures.size() == 1);
  CHECK(freed.tenures[0].ended_at);
}

TEST_CASE("events above the checkpoint are never trimmed", "[checkpoint]") {
  EngineConfig config = rare_checkpoints();
  config.events_keep = 10;
  EngineFixture f(config);
  for (int i = 0; i < 5000; ++i) {
    REQUIRE(f.acquire("tr/" + std::to_string(i), "a", 600'000).status == AcquireStatus::acquired);
  }
  REQUIRE(f.engine().oldest_revision() > 1);
  CrashImage crash(f);
  crash.restore();
  f.open();
  auto held = f.list("tr/", 10'000);
  REQUIRE_FALSE(held.error);
  CHECK(held.leases.size() == 5000);
}

TEST_CASE("trimmed events leave the disk as whole table files, not as tombstones", "[checkpoint]") {
  EngineConfig config;
  config.events_keep = 10;
  config.sync = false;
  EngineFixture f(config);
  auto write = [&](int round) {
    for (int i = 0; i < 5000; ++i) {
      std::string key = "dr/" + std::to_string(round) + "/" + std::to_string(i);
      REQUIRE(f.acquire(key, "a", 600'000).status == AcquireStatus::acquired);
    }
  };
  write(0);
  f.close();
  // The first 5,000 events in a table file of their own, moved down as RocksDB moves the log's
  // flushes (files in level 0 are not dropped, only those below it).
  test::with_raw_ledger(f.data_dir(), [](rocksdb::DB& db, const auto& handles) {
    return db.CompactRange(rocksdb::CompactRangeOptions(), handles[3], nullptr, nullptr);
  });
  f.open();
  write(1);
  Revision oldest = f.engine().oldest_revision();
  f.close();
  REQUIRE(oldest > 5000);

  test::with_raw_ledger(f.data_dir(), [&](rocksdb::DB& db, const auto& handles) {
    std::vector<rocksdb::LiveFileMetaData> files;
    db.GetLiveFilesMetaData(&files);
    std::size_t event_files = 0;
    for (const auto& file : files) {
      if (file.column_family_name != "events") continue;
      ++event_files;
      INFO("table file " << file.name << " at level " << file.level);
      CHECK(storage::from_big_endian(file.largestkey) >= oldest);
      CHECK(file.num_deletions == 0);  // no tombstone was written
    }
    CHECK(event_files > 0);
    // What is left of the log starts at or below the oldest kept event: nothing kept is missing.
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator(rocksdb::ReadOptions(), handles[3]));
    it->SeekToFirst();
    REQUIRE(it->Valid());
    CHECK(storage::from_big_endian(it->key().ToStringView()) <= oldest);
    return it->status();
  });
}

TEST_CASE("an undecodable event above the checkpoint is refused, then recovered", "[checkpoint]") {
  EngineFixture f(rare_checkpoints());
  Token max_token = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = f.acquire("bad/" + std::to_string(i), "a", 600'000);
    REQUIRE(r.status == AcquireStatus::acquired);
    max_token = std::max(max_token, r.lease->token);
  }
  Revision revision = f.engine().revision();
  CrashImage crash(f);
  crash.restore();
  test::put_raw(f.data_dir(), 3, storage::big_endian(revision - 3), "\x81garbage");
  std::string error;
  try {
    f.open();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  CHECK_THAT(error, Catch::Contains("damaged"));
  CHECK_THAT(error, Catch::Contains("revision " + std::to_string(revision - 3)));
  CHECK_THAT(error, Catch::Contains("--recover"));

  f.config().open_mode = storage::OpenMode::recover;
  f.open();
  f.config().open_mode = storage::OpenMode::normal;
  CHECK(f.list("bad/", 100).leases.size() == 19);  // every other lease is still held
  f.revoke("bad/17");
  auto r = f.acquire("bad/17", "b");
  REQUIRE(r.status == AcquireStatus::acquired);
  CHECK(r.lease->token > max_token);
  CHECK(r.lease->token > revision);
}

TEST_CASE("a checkpoint of many chunks writes every key's rows", "[checkpoint]") {
  // Several chunks' worth of keys, written in key order across the whole checkpoint: a key that
  // the chunks skipped or wrote twice would be missing after the clean stop (nothing above its
  // checkpoint is replayed) or would show a tenure twice.
  EngineFixture f(rare_checkpoints());
  constexpr int kKeys = 5000;
  for (int i = 0; i < kKeys; ++i) {
    std::string key = "many/" + std::to_string(i * 7919 % kKeys);
    REQUIRE(f.acquire(key, "a", 600'000).status == AcquireStatus::acquired);
    if (i % 2 == 0) REQUIRE(f.release(key, "a").status == HolderStatus::ok);
  }
  f.close();
  f.open();
  auto held = f.list("many/", 10'000);
  REQUIRE_FALSE(held.error);
  CHECK(held.leases.size() == kKeys / 2);
  for (int i = 0; i < kKeys; i += 2) {
    auto history = f.history("many/" + std::to_string(i * 7919 % kKeys));
    REQUIRE(history.tenures.size() == 1);
    CHECK(history.tenures[0].end == EndReason::released);
  }
}
