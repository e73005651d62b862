// Damaged ledgers (§6): a torn or corrupted WAL, a corrupted table file, missing files. By default
// the engine refuses to open them, naming the damage; --recover opens what can be read and goes
// on above every revision and token issued before.
#include <rocksdb/db.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "storage/codec.hpp"
#include "storage/marks.hpp"
#include "storage/wal_format.hpp"
#include "storage/wal_replay.hpp"
#include "storage/wal_tail.hpp"
#include "tests/support/watch_collector.hpp"
#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;
namespace fs = std::filesystem;

namespace {

constexpr int kKeys = 300;

// What the ledger acknowledged before it was damaged.
struct Issued {
  Revision revision = 0;
  Token max_token = 0;
};

// 300 held leases, and tokens up to 3 on rec/0.
Issued fill(EngineFixture& f) {
  Issued issued;
  for (int round = 0; round < 2; ++round) {
    REQUIRE(f.acquire("rec/0", "a", 600'000).status == AcquireStatus::acquired);
    REQUIRE(f.release("rec/0", "a").status == HolderStatus::ok);
  }
  for (int i = 0; i < kKeys; ++i) {
    auto r = f.acquire("rec/" + std::to_string(i), "a", 600'000);
    REQUIRE(r.status == AcquireStatus::acquired);
    issued.max_token = std::max(issued.max_token, r.lease->token);
  }
  issued.revision = f.engine().revision();
  return issued;
}

std::string newest(const std::string& dir, const std::string& extension) {
  std::string found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == extension && entry.path().string() > found) {
      found = entry.path().string();
    }
  }
  REQUIRE_FALSE(found.empty());
  return found;
}

void flip(const std::string& file, std::uintmax_t offset, std::size_t n) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(io);
  std::string bytes(n, '\0');
  io.seekg(static_cast<std::streamoff>(offset));
  io.read(bytes.data(), static_cast<std::streamsize>(n));
  for (char& c : bytes) c = static_cast<char>(~c);
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(bytes.data(), static_cast<std::streamsize>(n));
}

// The table file of column family `family`, after flushing the memtables into table files.
std::string flushed_table(const std::string& dir, const std::string& family) {
  std::string table;
  test::with_raw_ledger(dir, [&](rocksdb::DB& db, const auto& handles) {
    REQUIRE(db.Flush(rocksdb::FlushOptions(), handles).ok());
    std::vector<rocksdb::LiveFileMetaData> files;
    db.GetLiveFilesMetaData(&files);
    for (const auto& file : files) {
      if (file.column_family_name == family) table = file.db_path + "/" + file.name;
    }
    return rocksdb::Status::OK();
  });
  REQUIRE_FALSE(table.empty());
  return fs::path(table).lexically_normal().string();
}

std::string open_error(EngineFixture& f) {
  try {
    f.open();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// Recovers, then checks that nothing goes back: the revision and every new token are above
// everything issued, and the recovery is an event.
void recover_and_check(EngineFixture& f, const Issued& issued, int must_keep = 0) {
  f.config().open_mode = storage::OpenMode::recover;
  f.open();
  f.config().open_mode = storage::OpenMode::normal;
  // It keeps what it can read: the leases the damage spared are still held.
  auto kept = f.list("rec/", 1000);
  REQUIRE_FALSE(kept.error);
  CHECK(static_cast<int>(kept.leases.size()) >= must_keep);
  CHECK(f.engine().revision() > issued.revision);
  std::vector<Event> events;
  REQUIRE(f.engine().events_from(issued.revision + 1, 10, events).ok());
  REQUIRE_FALSE(events.empty());
  CHECK(events.front().type == EventType::recovered);
  for (int i = 0; i < kKeys; i += 37) {
    std::string key = "rec/" + std::to_string(i);
    f.revoke(key);  // whatever survived of its lease
    auto r = f.acquire(key, "b", 600'000);
    REQUIRE(r.status == AcquireStatus::acquired);
    CHECK(r.lease->token > issued.max_token);
    CHECK(r.lease->token > issued.revision);
    CHECK(r.revision > issued.revision);
  }
  auto fresh = f.acquire("never/leased", "b");
  CHECK(fresh.lease->token > issued.revision);
  // A watcher resuming after the last revision it saw gets the recovery, not `compacted`: no
  // event was ever in the jump.
  auto sink = std::make_shared<test::Collector>();
  Revision current = 0;
  auto watch = f.engine().watch(WatchFilter{}, Revision{issued.revision + 1}, sink, current);
  auto resumed = sink->wait_for(1);
  CHECK_FALSE(sink->compacted(std::chrono::milliseconds(0)));
  REQUIRE_FALSE(resumed.empty());
  CHECK(resumed.front().type == EventType::recovered);
  f.engine().unwatch(watch);
  // A clean restart keeps it so.
  f.reopen();
  auto later = f.acquire("later", "b");
  CHECK(later.lease->token > issued.revision);
}

}  // namespace

TEST_CASE("a WAL truncated to half is refused, then recovered above every token", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  f.close();
  std::string wal = newest(f.data_dir(), ".log");
  fs::resize_file(wal, fs::file_size(wal) / 2);
  std::string error = open_error(f);
  CHECK_THAT(error, Catch::Contains("damaged"));
  CHECK_THAT(error, Catch::Contains("acknowledged changes are missing"));
  CHECK_THAT(error, Catch::Contains(fs::path(wal).filename().string()));
  CHECK(open_error(f) == error);  // refusing changed nothing
  CHECK_THAT(error, Catch::Contains("--recover"));
  recover_and_check(f, issued);
}

TEST_CASE("events missing above the checkpoint are refused, then recovered above every token",
          "[damage]") {
  // No checkpoint but the one at a clean stop: the events after it are the only copy of their
  // rows.
  EngineConfig config;
  config.checkpoint_every = std::chrono::hours(1);
  EngineFixture f(config);
  REQUIRE(f.acquire("first", "a").status == AcquireStatus::acquired);
  f.reopen();  // the checkpoint
  Issued issued = fill(f);
  // What a kill -9 leaves (copied while it runs), then what a WAL lost between two others takes:
  // events in the middle of those above the checkpoint.
  std::string image = f.data_dir() + ".crash";
  fs::copy(f.data_dir(), image, fs::copy_options::recursive);
  f.close();
  fs::remove_all(f.data_dir());
  fs::rename(image, f.data_dir());
  test::with_raw_ledger(f.data_dir(), [&](rocksdb::DB& db, const auto& families) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status s;
    for (Revision r = issued.revision - 20; r < issued.revision - 10 && s.ok(); ++r) {
      s = db.Delete(wo, families[3], storage::big_endian(r));
    }
    return s;
  });
  std::string error = open_error(f);
  CHECK_THAT(error,
             Catch::Contains("the events of revisions " + std::to_string(issued.revision - 20) +
                             " to " + std::to_string(issued.revision - 11) +
                             ", above the last checkpoint, are missing"));
  recover_and_check(f, issued);
}

TEST_CASE("a WAL with bytes flipped in its middle is refused, then recovered", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  f.close();
  std::string wal = newest(f.data_dir(), ".log");
  flip(wal, fs::file_size(wal) / 2, 64);
  std::string error = open_error(f);
  CHECK_THAT(error, Catch::Contains("damaged"));
  CHECK_THAT(error, Catch::Contains(fs::path(wal).filename().string()));
  recover_and_check(f, issued, kKeys / 3);  // the rest of the damaged 32 KiB block is lost
}

TEST_CASE("a WAL cut short by 1000 bytes is refused, then recovered", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  // 1000 bytes of the events, not of the checkpoint a clean stop appends (which the journals of
  // those events would rebuild).
  // (Where the WAL's records end: the file is preallocated beyond them while the ledger runs.)
  storage::WalTail tail;
  REQUIRE(storage::scan_wal_tail(newest(f.data_dir(), ".log"), tail).ok());
  std::uintmax_t acknowledged = tail.records;
  f.close();
  std::string wal = newest(f.data_dir(), ".log");
  fs::resize_file(wal, acknowledged - 1000);
  std::string error = open_error(f);
  CHECK_THAT(error, Catch::Contains("acknowledged changes are missing"));
  recover_and_check(f, issued, kKeys - 20);
}

TEST_CASE("a corrupted table file is refused at start-up, then recovered", "[damage]") {
  auto family = GENERATE(std::string("leases"), std::string("events"), std::string("tenures"));
  EngineFixture f;
  Issued issued = fill(f);
  f.close();
  std::string table = flushed_table(f.data_dir(), family);
  flip(table, fs::file_size(table) / 4, 64);
  std::string error = open_error(f);
  CHECK_THAT(error, Catch::Contains("damaged"));
  CHECK_THAT(error, Catch::Contains(fs::path(table).filename().string()));
  // No lease is lost: the events' journals rebuild a lost lease table.
  recover_and_check(f, issued, kKeys);
}

TEST_CASE("a lost lease table is rebuilt from the events, each lease with its token", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  auto before = f.list("rec/", 1000);
  REQUIRE(before.leases.size() == kKeys);
  f.close();
  std::string table = flushed_table(f.data_dir(), "leases");
  fs::remove(table);
  std::string error = open_error(f);
  CHECK_THAT(error, Catch::Contains("a file is missing: " + table + ": No such file"));
  CHECK_THAT(error, Catch::Contains("MANIFEST"));
  f.config().open_mode = storage::OpenMode::recover;
  f.open();
  f.config().open_mode = storage::OpenMode::normal;
  for (const auto& lease : before.leases) {
    auto got = f.get(lease.key);
    REQUIRE(got.lease);
    CHECK(got.lease->token == lease.lease.token);
    CHECK(got.lease->owner == lease.lease.owner);
    CHECK(got.lease->expires_at == lease.lease.expires_at);
  }
  // Its holder renews it; a newcomer waits (the lease is held) or gets a token above all.
  CHECK(f.renew("rec/7", "a").status == HolderStatus::ok);
  CHECK(f.acquire("rec/7", "b", 600'000).status == AcquireStatus::held);
  CHECK(f.acquire("other", "b").lease->token > issued.revision);
}

// Removes CURRENT and every MANIFEST: the table files and WALs are left without their index.
void lose_manifest(const std::string& dir) {
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name == "CURRENT" || name.rfind("MANIFEST-", 0) == 0) removed += fs::remove(entry.path());
  }
  REQUIRE(removed >= 2);
}

// Recovers, and finds every lease of `before` with its token and owner, and rec/0's history.
void recover_keeping(EngineFixture& f, const Issued& issued, const ListResult& before) {
  f.config().open_mode = storage::OpenMode::recover;
  f.open();
  f.config().open_mode = storage::OpenMode::normal;
  CHECK(f.list("rec/", 1000).leases.size() == before.leases.size());
  for (const auto& lease : before.leases) {
    auto got = f.get(lease.key);
    REQUIRE(got.lease);
    CHECK(got.lease->token == lease.lease.token);
    CHECK(got.lease->owner == lease.lease.owner);
  }
  CHECK(f.history("rec/0", 10).tenures.size() == 3);
  CHECK(f.acquire("other", "b").lease->token > issued.revision);
  f.reopen();
  CHECK(f.get("rec/0").lease->token == 3);
}

TEST_CASE("a ledger whose MANIFEST is lost keeps the changes only its WALs hold", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  auto before = f.list("rec/", 1000);
  REQUIRE(before.leases.size() == kKeys);
  f.close();
  // Nothing was flushed: every change is in the WAL, which a repair alone would throw away (it
  // rebuilds the MANIFEST from table files only).
  lose_manifest(f.data_dir());
  // Refused without a change: an open would have made a new, empty ledger over the old files.
  CHECK_THAT(open_error(f), Catch::Contains("its CURRENT file is missing"));
  CHECK_FALSE(fs::exists(f.data_dir() + "/CURRENT"));
  recover_keeping(f, issued, before);
  CHECK_FALSE(fs::exists(f.data_dir() + "/wal-replay"));
}

TEST_CASE("a recovery killed after its repair replays the WALs it set aside when run again",
          "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  auto before = f.list("rec/", 1000);
  f.close();
  lose_manifest(f.data_dir());
  // What a recovery killed between the repair and the replay leaves.
  REQUIRE(storage::mark_recovery(f.data_dir(), "--recover").ok());
  REQUIRE(storage::set_aside_wals(f.data_dir()).ok());
  REQUIRE(rocksdb::RepairDB(f.data_dir(), rocksdb::Options()).ok());
  CHECK_THAT(open_error(f), Catch::Contains("did not finish"));
  SECTION("the next run replays them") { recover_keeping(f, issued, before); }
  SECTION("with a WAL written since, set aside after them") {
    // A repaired ledger numbers its files afresh: a WAL it writes may take a set-aside one's
    // number, and must be replayed after it, not instead of it.
    rocksdb::Options options;
    options.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(options, f.data_dir(), test::ledger_families(), &handles, &raw).ok());
    rocksdb::WriteOptions wo;
    wo.sync = true;
    REQUIRE(raw->Put(wo, handles[4], "written-since", "1").ok());
    for (auto* h : handles) REQUIRE(raw->DestroyColumnFamilyHandle(h).ok());
    REQUIRE(raw->Close().ok());
    delete raw;
    REQUIRE(storage::set_aside_wals(f.data_dir()).ok());
    recover_keeping(f, issued, before);
    f.close();
    test::with_raw_ledger(f.data_dir(), [](rocksdb::DB& db, const auto& families) {
      std::string value;
      rocksdb::Status s = db.Get(rocksdb::ReadOptions(), families[4], "written-since", &value);
      CHECK(s.ok());
      return rocksdb::Status::OK();
    });
  }
}

TEST_CASE("a recovery killed inside its repair repairs again, keeping every table file",
          "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  auto before = f.list("rec/", 1000);
  f.close();
  flushed_table(f.data_dir(), "leases");  // every row in table files
  // What RepairDB killed after its first step leaves: a fresh, empty MANIFEST that CURRENT names
  // (made here in a directory of its own, and copied in).
  test::TempDir empty;
  {
    rocksdb::Options options;
    options.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(options, empty.str("db"), &raw).ok());
    REQUIRE(raw->Close().ok());
    delete raw;
  }
  lose_manifest(f.data_dir());
  for (const auto& entry : fs::directory_iterator(empty.str("db"))) {
    std::string name = entry.path().filename().string();
    if (name == "CURRENT" || name.rfind("MANIFEST-", 0) == 0) {
      fs::copy_file(entry.path(), f.data_dir() + "/" + name);
    }
  }
  REQUIRE(storage::mark_recovery(f.data_dir(), "--recover").ok());
  REQUIRE(storage::mark_repair(f.data_dir()).ok());
  CHECK_THAT(open_error(f), Catch::Contains("did not finish"));
  recover_keeping(f, issued, before);
  CHECK_FALSE(storage::repair_marked(f.data_dir()));
}

TEST_CASE("a ledger whose files are gone is refused though no revision was marked durable yet",
          "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  f.close();
  // What a crash in the first second of a new ledger leaves: revisions reserved, none marked
  // durable.
  fs::remove_all(f.data_dir());
  REQUIRE(
      storage::write_marks(f.data_dir() + ".marks", storage::Marks{issued.revision + 10, 0}).ok());
  CHECK_THAT(open_error(f), Catch::Contains("may have been issued"));
  f.config().open_mode = storage::OpenMode::recover;
  f.open();
  f.config().open_mode = storage::OpenMode::normal;
  CHECK(f.acquire("rec/0", "b").lease->token > issued.revision);
}

TEST_CASE("a repair replays the WAL records around a damaged one", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  f.close();
  lose_manifest(f.data_dir());
  // A byte in the payload of the WAL's 100th record: its checksum fails, its header still
  // frames it, so only that write is lost.
  std::string wal = newest(f.data_dir(), ".log");
  std::ifstream in(wal, std::ios::binary);
  std::string block(storage::wal::kBlock, '\0');
  in.read(block.data(), static_cast<std::streamsize>(block.size()));
  std::size_t n = static_cast<std::size_t>(in.gcount()), pos = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(block.data());
  for (int record = 0; record < 100; ++record) {
    auto fragment = storage::wal::read_fragment(data, n, pos);
    REQUIRE(fragment.kind == storage::wal::Fragment::Kind::whole);
    pos += storage::wal::kHeader + fragment.length;
  }
  auto target = storage::wal::read_fragment(data, n, pos);
  REQUIRE(target.kind == storage::wal::Fragment::Kind::whole);
  flip(wal, pos + storage::wal::kHeader + target.length / 2, 1);
  recover_and_check(f, issued, kKeys - 1);
}

TEST_CASE("a recovery that stopped half way is refused until it runs again", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  f.close();
  // What a recovery killed after RocksDB's repair, before it moved above the tokens issued,
  // leaves: its mark, and a ledger that would otherwise open as if nothing had happened.
  REQUIRE(storage::mark_recovery(f.data_dir(), "--recover").ok());
  std::string error = open_error(f);
  CHECK_THAT(error, Catch::Contains("did not finish"));
  CHECK_THAT(error, Catch::Contains("--recover"));
  CHECK(open_error(f) == error);
  recover_and_check(f, issued);
  std::optional<std::string> mark;
  REQUIRE(storage::read_recovery_mark(f.data_dir(), mark).ok());
  CHECK_FALSE(mark.has_value());
}

TEST_CASE("a ledger whose files are gone is refused, then recovered above the marks", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  f.close();
  fs::remove_all(f.data_dir());
  std::string error = open_error(f);
  CHECK_THAT(error, Catch::Contains("missing"));
  f.config().open_mode = storage::OpenMode::recover;
  f.open();
  f.config().open_mode = storage::OpenMode::normal;
  auto r = f.acquire("rec/0", "b");
  CHECK(r.lease->token > issued.max_token);
  CHECK(r.revision > issued.revision);
}

TEST_CASE("a ledger whose marks file is lost is refused, and recovered only with a floor",
          "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  f.close();
  // With its newest records lost too, the ledger alone would issue their revisions and tokens
  // again; a plain start cannot tell, so it refuses and rewrites nothing.
  std::string marks = f.data_dir() + ".marks";
  fs::remove(marks);
  std::string error = open_error(f);
  CHECK_THAT(error, Catch::Contains("marks file " + marks + " is missing"));
  CHECK_FALSE(fs::exists(marks));
  f.config().open_mode = storage::OpenMode::recover;
  CHECK_THAT(open_error(f), Catch::Contains("--revision-floor"));
  f.config().revision_floor = issued.revision;
  f.open();
  f.config().open_mode = storage::OpenMode::normal;
  f.config().revision_floor = 0;
  CHECK(f.get("rec/0").lease->token == 3);  // leases kept
  CHECK(f.acquire("fresh/k", "b").lease->token > issued.revision);
  f.reopen();
  CHECK(f.engine().revision() > issued.revision);
}

TEST_CASE("an intact ledger opens as before, and a crash's torn tail is no damage", "[damage]") {
  EngineFixture f;
  Issued issued = fill(f);
  f.reopen();
  CHECK(f.engine().revision() == issued.revision);
  CHECK(f.get("rec/0").lease->token == 3);
}

TEST_CASE("reads that fail while serving answer unavailable; a replay ends with an error",
          "[damage]") {
  EngineConfig config;
  EngineFixture f(config);
  Issued issued = fill(f);
  f.close();
  std::string events = flushed_table(f.data_dir(), "events");
  std::string leases = flushed_table(f.data_dir(), "leases");
  f.config().skip_verify = true;  // as if the damage happened while running
  f.open();
  flip(events, fs::file_size(events) / 4, 64);
  flip(leases, fs::file_size(leases) / 4, 64);

  auto listed = f.list("rec/", 1000);
  REQUIRE(listed.error);
  CHECK(listed.error->code == errc::unavailable);
  std::vector<Event> replay;
  auto status = f.engine().events_from(1, 100'000, replay);
  CHECK_FALSE(status.ok());
  CHECK(status.code() == storage::errc::corruption);

  auto sink = std::make_shared<test::Collector>();
  Revision current = 0;
  auto watch = f.engine().watch(WatchFilter{}, Revision{1}, sink, current);
  auto failed = sink->failed();
  REQUIRE(failed);
  CHECK(failed->first >= 1);
  CHECK(failed->first <= issued.revision);
  CHECK_THAT(failed->second, Catch::Contains("cannot read the ledger"));
  auto delivered = sink->events();
  CHECK((delivered.empty() || delivered.back().revision < failed->first));  // none past it
  f.engine().unwatch(watch);
}
