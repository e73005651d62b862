// DirtyRows lists each key changed since the last checkpoint began once, and forgets a
// checkpoint's rows key by key, keeping (and listing again) what changed after it.
#include "storage/dirty_rows.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace tenure;
using tenure::storage::DirtyRows;

namespace {

std::vector<std::string> keys_of(const DirtyRows::KeyList& list) {
  std::vector<std::string> keys;
  std::size_t begin = 0;
  for (std::size_t end : list.ends) {
    keys.emplace_back(list.bytes.substr(begin, end - begin));
    begin = end;
  }
  return keys;
}

void put_row(DirtyRows& rows, std::string_view key, std::string row, Revision revision) {
  TenureRecords none;
  rows.record(key, row, none, revision);
}

}  // namespace

TEST_CASE("an op's ended tenures are recorded with its row, its live one is not", "[checkpoint]") {
  DirtyRows rows;
  TenureRecords tenures(2);
  tenures[0].token = 1;
  tenures[0].ended_at = 50;
  tenures[1].token = 2;  // taken by the same op: live, its row says so
  rows.record("k", std::string("k2"), tenures, 7);
  const auto* k = rows.find("k");
  REQUIRE(k != nullptr);
  CHECK(*k->row == "k2");
  CHECK(k->row_revision == 7);
  REQUIRE(k->tenures.size() == 1);
  CHECK(k->tenures[0].first == 7);
  CHECK(k->tenures[0].second.token == 1);

  TenureRecords live(1);
  rows.record("quiet", std::nullopt, live, 8);  // nothing to write: no entry
  CHECK(rows.find("quiet") == nullptr);
}

TEST_CASE("each changed key is listed once per checkpoint", "[checkpoint]") {
  DirtyRows rows;
  put_row(rows, "a", "a1", 1);
  put_row(rows, "b", "b1", 2);
  put_row(rows, "a", "a2", 3);
  DirtyRows::KeyList first;
  rows.take_listed(first);
  CHECK(keys_of(first) == std::vector<std::string>{"a", "b"});

  put_row(rows, "b", "b2", 4);  // changed again after the list was taken
  DirtyRows::KeyList second;
  rows.take_listed(second);
  CHECK(keys_of(second) == std::vector<std::string>{"b"});

  DirtyRows::KeyList none;
  rows.take_listed(none);
  CHECK(none.ends.empty());
}

TEST_CASE("a durable checkpoint's rows are forgotten; newer ones stay and are listed again",
          "[checkpoint]") {
  DirtyRows rows;
  put_row(rows, "a", "a1", 1);
  put_row(rows, "b", "b1", 2);
  put_row(rows, "c", "c1", 3);
  DirtyRows::KeyList checkpoint;
  rows.take_listed(checkpoint);  // a checkpoint at revision 3
  put_row(rows, "b", "b2", 5);   // while it is written
  DirtyRows::KeyList next;
  rows.take_listed(next);  // the next checkpoint's list: b

  std::size_t at = 0;
  rows.drop_listed(checkpoint, at, 2, 3);  // a chunk: a, b
  CHECK(at == 2);
  CHECK(rows.find("a") == nullptr);
  REQUIRE(rows.find("b") != nullptr);
  CHECK(*rows.find("b")->row == "b2");
  CHECK(rows.find("c") != nullptr);  // not reached yet
  rows.drop_listed(checkpoint, at, 2, 3);
  CHECK(at == 3);
  CHECK(rows.find("c") == nullptr);

  std::size_t from = 0;
  rows.drop_listed(next, from, 10, 5);
  CHECK(rows.empty());
}

TEST_CASE(
    "a row changed at the checkpoint's revision + 1 before the list was taken is listed "
    "again when the checkpoint is dropped",
    "[checkpoint]") {
  DirtyRows rows;
  put_row(rows, "k", "k1", 4);  // an op without events counts as above the revision (3)
  DirtyRows::KeyList checkpoint;
  rows.take_listed(checkpoint);
  std::size_t at = 0;
  rows.drop_listed(checkpoint, at, 10, 3);
  REQUIRE(rows.find("k") != nullptr);
  DirtyRows::KeyList next;
  rows.take_listed(next);
  CHECK(keys_of(next) == std::vector<std::string>{"k"});
}

TEST_CASE("relisting lists every dirty key, once", "[checkpoint]") {
  DirtyRows rows;
  put_row(rows, "a", "a1", 1);
  put_row(rows, "b", "b1", 2);
  DirtyRows::KeyList refused;
  rows.take_listed(refused);
  put_row(rows, "c", "c1", 3);
  rows.relist_all();
  put_row(rows, "c", "c2", 4);
  DirtyRows::KeyList all;
  rows.take_listed(all);
  auto keys = keys_of(all);
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"a", "b", "c"});
}

namespace {

// Dirties `count` keys, checkpoints them all and drops the checkpoint; the table's slots after.
std::size_t slots_after_dropping(DirtyRows& rows, int count) {
  for (int i = 0; i < count; ++i) put_row(rows, "key" + std::to_string(i), "row", i + 1);
  DirtyRows::KeyList checkpoint;
  rows.take_listed(checkpoint);
  std::size_t at = 0;
  rows.drop_listed(checkpoint, at, checkpoint.ends.size(), count);
  REQUIRE(rows.empty());
  return rows.slots();
}

}  // namespace

TEST_CASE("a burst's table is given back once nothing is dirty; a steady load's is kept",
          "[checkpoint]") {
  DirtyRows rows;
  CHECK(slots_after_dropping(rows, 1000) > 0);    // the next second's keys reuse it
  CHECK(slots_after_dropping(rows, 40000) == 0);  // a burst's
  put_row(rows, "again", "row", 40001);           // and works on
  CHECK(rows.find("again") != nullptr);
}

TEST_CASE("a table that outgrows its room moves its keys a few per op; none is lost meanwhile",
          "[checkpoint]") {
  DirtyRows rows;
  int keys = 0;
  auto key = [](int i) { return "key" + std::to_string(i); };
  // Until a growth is under way: a table rehashed at once never has keys moving.
  while (rows.moving() == 0 && keys < 100000) {
    put_row(rows, key(keys), "a", keys + 1);
    ++keys;
  }
  REQUIRE(rows.moving() > 0);
  REQUIRE(rows.moving() < static_cast<std::size_t>(keys));  // new keys went to the new table
  std::size_t moving = rows.moving();
  rows.move_some(10);
  CHECK(rows.moving() == moving - 10);
  for (int i = 0; i < keys; ++i) {
    const auto* k = rows.find(key(i));
    REQUIRE(k != nullptr);
    CHECK(*k->row == "a");
  }
  // Changed while it moves: one entry per key, the newest row; each changed key moves.
  for (int i = 0; i < keys; ++i) put_row(rows, key(i), "b", keys + 1 + i);
  CHECK(rows.moving() == 0);
  std::size_t entries = 0;
  rows.for_each([&](const DirtyRows::Map::value_type& entry) {
    ++entries;
    CHECK(*entry.second.row == "b");
  });
  CHECK(entries == static_cast<std::size_t>(keys));

  DirtyRows::KeyList listed;
  rows.take_listed(listed);
  CHECK(listed.ends.size() == static_cast<std::size_t>(keys));  // each once
  std::size_t at = 0;
  rows.drop_listed(listed, at, listed.ends.size(), 2 * keys + 1);
  CHECK(rows.empty());
}

TEST_CASE("a checkpoint drops keys still in the table being outgrown", "[checkpoint]") {
  DirtyRows rows;
  int keys = 0;
  while (rows.moving() == 0 && keys < 100000) {
    put_row(rows, "key" + std::to_string(keys), "a", keys + 1);
    ++keys;
  }
  REQUIRE(rows.moving() > 0);
  DirtyRows::KeyList listed;
  rows.take_listed(listed);
  std::size_t at = 0;
  rows.drop_listed(listed, at, listed.ends.size(), keys);
  CHECK(rows.empty());
  CHECK(rows.moving() == 0);
  put_row(rows, "after", "row", keys + 1);  // and the next key finds a table
  CHECK(rows.find("after") != nullptr);
}
