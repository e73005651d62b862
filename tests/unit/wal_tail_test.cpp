// A crash leaves a ledger's preallocated WAL with zeros after its last record, perhaps after a
// record it cut short: cut_wal_tails() cuts that tail back, and only that. The WALs here are
// written by RocksDB itself through the ledger's file system, and copied while it runs: what a
// crash (kill -9) leaves.
#include "storage/wal_tail.hpp"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "storage/ledger_fs.hpp"
#include "storage/wal_format.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tenure;
namespace fs = std::filesystem;

namespace {

std::string value_of(int i) { return std::string(i % 7 == 6 ? 3000 : 100, char('a' + i % 26)); }

rocksdb::Options options(rocksdb::Env* env) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.env = env;
  o.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  o.paranoid_checks = true;
  return o;
}

std::string the_wal(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".log") return entry.path().string();
  }
  FAIL("no WAL in " << dir);
  return "";
}

// A ledger directory as a crash leaves it, with `keys` synced writes in its WAL.
struct CrashImage {
  test::TempDir live, image;
  std::unique_ptr<rocksdb::Env> env =
      rocksdb::NewCompositeEnv(storage::ledger_file_system(rocksdb::FileSystem::Default()));
  std::uint64_t records_before_last = 0;  // where the last write's record begins

  explicit CrashImage(int keys) {
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(options(env.get()), live.str("db"), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteOptions synced;
    synced.sync = true;
    for (int i = 0; i < keys; ++i) {
      if (i == keys - 1) records_before_last = scan().records;
      REQUIRE(db->Put(synced, "k" + std::to_string(i), value_of(i)).ok());
    }
    fs::create_directory(image.str("db"));
    for (const auto& entry : fs::directory_iterator(live.str("db"))) {
      if (entry.path().filename() != "LOCK") fs::copy(entry.path(), image.str("db"));
    }
    REQUIRE(db->Close().ok());
  }

  std::string wal() const { return the_wal(image.str("db")); }
  storage::WalTail scan() const {
    storage::WalTail tail;
    REQUIRE(storage::scan_wal_tail(the_wal(live.str("db")), tail).ok());
    return tail;
  }
  storage::WalTail scan_image() const {
    storage::WalTail tail;
    REQUIRE(storage::scan_wal_tail(wal(), tail).ok());
    return tail;
  }
  // Opens the image with RocksDB and counts the written keys it has, in order.
  rocksdb::Status open(int keys, int& found) const {
    found = 0;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options(env.get()), image.str("db"), &raw);
    if (!s.ok()) return s;
    std::unique_ptr<rocksdb::DB> db(raw);
    for (int i = 0; i < keys; ++i) {
      std::string value;
      rocksdb::Status got = db->Get(rocksdb::ReadOptions(), "k" + std::to_string(i), &value);
      if (got.IsNotFound()) break;
      REQUIRE(got.ok());
      REQUIRE(value == value_of(i));
      ++found;
    }
    return db->Close();
  }
};

void zero(const std::string& file, std::uint64_t from, std::uint64_t to) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(io);
  io.seekp(static_cast<std::streamoff>(from));
  std::string zeros(to - from, '\0');
  io.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
}

// A WAL changed in its whole records (`whole` before the change): nothing is cut, and RocksDB
// refuses it.
void left_for_the_open(const CrashImage& crash, const storage::WalTail& whole, int keys) {
  storage::WalTail changed = crash.scan_image();
  CHECK(changed.written == whole.records);
  CHECK(changed.cut_at == changed.size);
  std::uint64_t cut = 0;
  REQUIRE(storage::cut_wal_tails(crash.image.str("db"), cut).ok());
  CHECK(cut == 0);
  int found = 0;
  CHECK(crash.open(keys, found).IsCorruption());
}

}  // namespace

TEST_CASE("a crash's preallocated WAL tail is cut back to the last record; every write is kept",
          "[damage]") {
  constexpr int kKeys = 200;  // some 100 KiB: records in several 32 KiB blocks
  CrashImage crash(kKeys);
  storage::WalTail tail = crash.scan_image();
  CHECK(tail.size > tail.records);  // preallocated: the sync did not have to grow the file
  CHECK(tail.written <= tail.records);
  CHECK(tail.records > 100'000);
  CHECK(tail.cut_at == tail.records);
  std::uint64_t cut = 0;
  REQUIRE(storage::cut_wal_tails(crash.image.str("db"), cut).ok());
  CHECK(cut == tail.size - tail.records);
  CHECK(fs::file_size(crash.wal()) == tail.records);
  int found = 0;
  REQUIRE(crash.open(kKeys, found).ok());
  CHECK(found == kKeys);
}

TEST_CASE("a record a crash cut short before the zeros goes with them; RocksDB refused it",
          "[damage]") {
  constexpr int kKeys = 21;  // the last value is 3000 bytes: its record is the file's last
  CrashImage crash(kKeys);
  storage::WalTail whole = crash.scan_image();
  REQUIRE(crash.records_before_last > 0);
  REQUIRE(whole.records > crash.records_before_last + 3000);
  // The crash wrote the first half of the last record: the rest reads as zeros.
  zero(crash.wal(), crash.records_before_last + 1500, whole.records);
  storage::WalTail torn = crash.scan_image();
  CHECK(torn.records == crash.records_before_last);
  CHECK(torn.cut_at == crash.records_before_last);
  SECTION("RocksDB alone takes it for damage") {
    int found = 0;
    rocksdb::Status s = crash.open(kKeys, found);
    CHECK(s.IsCorruption());
  }
  SECTION("cut, it opens with every write but the one cut short") {
    std::uint64_t cut = 0;
    REQUIRE(storage::cut_wal_tails(crash.image.str("db"), cut).ok());
    CHECK(fs::file_size(crash.wal()) == crash.records_before_last);
    int found = 0;
    REQUIRE(crash.open(kKeys, found).ok());
    CHECK(found == kKeys - 1);
  }
}

TEST_CASE("a whole last record with changed bytes is damage, not a crash's tail", "[damage]") {
  constexpr int kKeys = 21;
  CrashImage crash(kKeys);
  storage::WalTail whole = crash.scan_image();
  {
    std::fstream io(crash.wal(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(crash.records_before_last + 1500));
    io.put('#');  // the value's bytes are letters: this one changed
  }
  CHECK(crash.scan_image().records == crash.records_before_last);
  left_for_the_open(crash, whole, kKeys);
}

TEST_CASE("a changed length is damage, not a crash's tail, wherever its record is", "[damage]") {
  constexpr int kKeys = 21;
  CrashImage crash(kKeys);
  storage::WalTail whole = crash.scan_image();
  // A record's length is bytes 4 and 5 of its header, little-endian.
  auto change_length = [&](std::uint64_t record, unsigned char high) {
    std::fstream io(crash.wal(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(record + 5));
    io.put(static_cast<char>(high));
  };
  SECTION("the last record's, past its block") { change_length(crash.records_before_last, 0xff); }
  SECTION("the record before it, over the last one and past the written end") {
    std::string block(storage::wal::kBlock, '\0');
    std::ifstream(crash.wal(), std::ios::binary).read(block.data(), block.size());
    const auto* data = reinterpret_cast<const unsigned char*>(block.data());
    std::uint64_t before_last = 0;
    for (std::uint64_t at = 0; at < crash.records_before_last;) {
      before_last = at;
      at += storage::wal::kHeader + storage::wal::read_fragment(data, block.size(), at).length;
    }
    change_length(before_last, 0x10);  // 4 KiB longer: it would end in the zeros
  }
  left_for_the_open(crash, whole, kKeys);
}

TEST_CASE("damage among a WAL's records is left for the open to report", "[damage]") {
  constexpr int kKeys = 200;
  CrashImage crash(kKeys);
  storage::WalTail tail = crash.scan_image();
  zero(crash.wal(), tail.records / 2, tail.records / 2 + 50);  // acknowledged writes after it
  storage::WalTail damaged = crash.scan_image();
  CHECK(damaged.records < tail.records / 2 + 50);
  CHECK(damaged.cut_at == damaged.size);
  std::uint64_t cut = 0;
  REQUIRE(storage::cut_wal_tails(crash.image.str("db"), cut).ok());
  CHECK(cut == 0);
  CHECK(fs::file_size(crash.wal()) == tail.size);
}

TEST_CASE("a WAL that a clean close cut, or that has no zeros at its end, is left alone",
          "[damage]") {
  CrashImage crash(50);
  storage::WalTail tail;
  std::string closed = the_wal(crash.live.str("db"));
  REQUIRE(storage::scan_wal_tail(closed, tail).ok());
  CHECK(tail.size == tail.records);
  CHECK(tail.cut_at == tail.size);
  std::uint64_t cut = 0;
  REQUIRE(storage::cut_wal_tails(crash.live.str("db"), cut).ok());
  CHECK(cut == 0);
  std::string cut_off;
  REQUIRE(storage::cut_wal_tails(crash.live.str("db"), cut, &cut_off).ok());
  CHECK(cut_off.empty());
}

TEST_CASE("a WAL whose last record was cut off by the end of the file is named, and kept",
          "[damage]") {
  CrashImage crash(50);
  std::string closed = the_wal(crash.live.str("db"));
  storage::WalTail whole;
  REQUIRE(storage::scan_wal_tail(closed, whole).ok());
  // Cut inside the last record, at a size no fallocate set: RocksDB would drop the record (it
  // tolerates a torn tail), and with it a synced write.
  std::uint64_t end = whole.size - 10;
  if (end % 4096 == 0) --end;
  fs::resize_file(closed, end);
  storage::WalTail tail;
  REQUIRE(storage::scan_wal_tail(closed, tail).ok());
  CHECK(tail.records < tail.size);
  CHECK(tail.cut_at == tail.size);
  CHECK(tail.cut_off);
  std::uint64_t cut = 0;
  std::string cut_off;
  REQUIRE(storage::cut_wal_tails(crash.live.str("db"), cut, &cut_off).ok());
  CHECK(cut == 0);
  CHECK(cut_off == closed);
  CHECK(fs::file_size(closed) == end);
  // At a page's end, where a crash that lost a fallocate's new size leaves it: a crash's tail.
  fs::resize_file(closed, end / 4096 * 4096);
  REQUIRE(storage::scan_wal_tail(closed, tail).ok());
  if (tail.records < tail.size) CHECK_FALSE(tail.cut_off);
}
