#pragma once
// The tenure ledger on RocksDB. Column families:
//   leases   key                  -> KeyState (kept after the lease ends: last_token lives on)
//   tenures  key '\0' BE64(token) -> TenureRecord of an ended tenure (the live one is the row's)
//   events   BE64(revision)       -> Event
//   meta     "oldest_revision", "schema" (the revision is the newest event's)
// Reads see only committed, hence durable, rows. All writes go through the GroupWriter.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/lease.hpp"
#include "storage/group_writer.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class Env;
}  // namespace rocksdb

namespace tenure::storage {

struct LedgerOptions {
  std::string path;
  bool sync = true;
  std::size_t history_keep = 1000;             // tenure records per key
  Millis history_max_age = 30LL * 86'400'000;  // and their age
  std::uint64_t events_keep = 1'000'000;       // event log length
  rocksdb::Env* env = nullptr;                 // tests put a failing file system here
};

struct LoadedState {
  KeyState state;
  bool corrupt = false;  // the row could not be decoded and was replaced by a safe one
};

struct LeaseRow {
  std::string key;
  Lease lease;
};

class Ledger {
 public:
  // Opens (or creates) the ledger. On failure returns null and says why in `error`.
  static std::unique_ptr<Ledger> open(const LedgerOptions& options, std::string& error);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  GroupWriter& writer() { return *writer_; }
  const GroupWriter& writer() const { return *writer_; }
  bool healthy() const { return writer_->healthy(); }
  Revision revision() const { return writer_->revision(); }
  Revision oldest_revision() const { return writer_->oldest_revision(); }

  // A key's row. A missing row is a never-leased key; an undecodable one is free with a
  // last_token no tenure can have had (tokens never exceed the revision).
  std::optional<LoadedState> load(std::string_view key, std::string& error) const;

  // Every row that holds a lease, for recovery.
  bool scan_leases(const std::function<void(std::string key, LoadedState)>& visit,
                   std::string& error) const;

  // Leases with key prefix `prefix`, after key `after`, at most `limit`, in key order. Leases
  // past their deadline at `now` are skipped (they are expired, whatever the row says).
  std::vector<LeaseRow> list(std::string_view prefix, std::string_view after, std::size_t limit,
                             Millis now, bool& more) const;

  // A key's tenures, newest first, with token < before_token (0: no bound).
  std::vector<TenureRecord> history(std::string_view key, Token before_token, std::size_t limit,
                                    bool& more) const;

  // Events with revision >= from, in order, at most `limit`.
  std::vector<Event> events_from(Revision from, std::size_t limit) const;

  // Drops tenure records older than the age limit (the count limit is kept on write).
  std::size_t compact_history(Millis now);

 private:
  Ledger() = default;

  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  ColumnFamilies cf_{};
  LedgerOptions options_;
  std::unique_ptr<GroupWriter> writer_;
};

}  // namespace tenure::storage
