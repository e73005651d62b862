#pragma once
// The tenure ledger on RocksDB. Column families:
//   leases   key                  -> KeyState (kept after the lease ends: last_token lives on)
//   tenures  key '\0' BE64(token) -> TenureRecord of an ended tenure (the live one is the row's)
//   events   BE64(revision)       -> Event; an op's last event also carries its journal: the
//                                    key's new row and the tenures it ended
//   meta     "oldest_revision", "schema", "token_floor", "checkpoint" (the revision is the
//            newest event's)
// Leases and tenures are written at checkpoints (GroupWriter): they are complete up to
// meta/checkpoint, and the journals above it hold the rest, which reads add from memory and an
// open after a crash writes back.
// Reads see only committed, hence durable, rows. All writes go through the GroupWriter. Every
// read returns a Status: a read that fails is an error, never fewer rows.
// The high-water marks live next to the ledger, outside RocksDB (see marks.hpp).
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/lease.hpp"
#include "storage/errc.hpp"
#include "storage/group_writer.hpp"
#include "storage/ledger_store.hpp"
#include "storage/marks.hpp"

namespace rocksdb {
struct DBOptions;
struct Options;
class DB;
class ColumnFamilyHandle;
class Env;
}  // namespace rocksdb

namespace tenure::storage {

// How to open a ledger that may be damaged (§6), or whose ledger a check reads.
enum class OpenMode {
  normal,    // refuse a ledger that cannot be recovered completely
  recover,   // salvage what can be read, then start above every revision and token issued
  restored,  // a backup was put in place: start above every revision and token issued
  taken,     // a backup just taken, read once before it is reported done (check only)
};

struct LedgerOptions {
  std::string path;
  std::string marks_path;  // default: path + ".marks"
  OpenMode mode = OpenMode::normal;
  // Recover/restore: start at least above this (for a ledger whose marks file is lost).
  Revision revision_floor = 0;
  bool sync = true;
  std::size_t history_keep = 1000;             // tenure records per key
  Millis history_max_age = 30LL * 86'400'000;  // and their age
  std::uint64_t events_keep = 1'000'000;       // event log length
  rocksdb::Env* env = nullptr;                 // tests put a failing file system here
  bool skip_verify = false;                    // skip the start-up check of every table file
  // Rows changed since the last checkpoint live in the event log (see GroupWriter).
  std::uint64_t checkpoint_ops = 65'536;
  std::chrono::milliseconds checkpoint_every{1000};
  std::chrono::microseconds gather_max{1000};  // see WriterConfig
};

class Ledger final : public LedgerStore {
 public:
  // Opens (or creates) the ledger. On failure returns null and says why in `status`.
  static std::unique_ptr<Ledger> open(const LedgerOptions& options, Status& status);
  // Reads every table file and the events' journals of the backup in `dir` without changing it,
  // as a start checks its ledger: a damaged backup is refused before it replaces anything.
  static Status check_backup(const std::string& dir);
  ~Ledger() override;
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  GroupWriter& writer() { return *writer_; }
  const GroupWriter& writer() const { return *writer_; }
  bool healthy() const override { return writer_->healthy(); }
  Revision revision() const override { return writer_->revision(); }
  Revision oldest_revision() const override { return writer_->oldest_revision(); }
  // New tenures start above it (non-zero after a recovery or restore).
  Token token_floor() const override { return token_floor_; }
  // What a recovery or restore did, for its event and the log; empty otherwise.
  const std::string& recovery_note() const override { return recovery_note_; }

  void submit(std::vector<WriteOp> ops, CommitDone done) override {
    writer_->submit(std::move(ops), std::move(done));
  }
  void refusal_settled() override { writer_->refusal_settled(); }
  void set_event_sink(EventSink sink) override { writer_->set_event_sink(std::move(sink)); }
  void flush() override { writer_->flush(); }
  void stop() override { writer_->stop(); }
  WriterStats stats() const override { return writer_->stats(); }
  std::string last_error() const override { return writer_->last_error(); }

  // A key's row. A missing row is a never-leased key; an undecodable one is free with a
  // last_token no tenure can have had (tokens never exceed the revision).
  Status load(std::string_view key, LoadedState& loaded) const override;

  // Every row that holds a lease, for recovery.
  Status scan_leases(const std::function<void(std::string key, LoadedState)>& visit) const override;

  // Leases with key prefix `prefix`, after key `after`, at most `limit`, in key order. Leases
  // past their deadline at `now` are skipped (they are expired, whatever the row says).
  Status list(std::string_view prefix, std::string_view after, std::size_t limit, Millis now,
              std::vector<LeaseRow>& rows, bool& more) const override;

  // A key's tenures, newest first, with token < before_token (0: no bound).
  Status history(std::string_view key, Token before_token, std::size_t limit,
                 std::vector<TenureRecord>& records, bool& more) const override;

  // Events with revision >= from, in order, at most `limit`.
  Status events_from(Revision from, std::size_t limit, std::vector<Event>& events) const override;

  // Drops tenure records older than the age limit (the count limit is kept on write).
  Status compact_history(Millis now, std::size_t& dropped) override;

  // An online, consistent copy of the ledger in `dir` (which must not exist yet).
  Status backup(const std::string& dir) const override;

 private:
  struct DurableRead;
  DurableRead scan_once() const;

  Ledger() = default;
  // `orphaned`: the ledger lost its CURRENT file (only a recovery opens it).
  Status open_db(rocksdb::Options db_options, bool orphaned);
  void close_db();
  Status check_schema(Revision revision);
  // Writes the rows of the journals above the checkpoint into their column families and the
  // checkpoint at `revision`. REQUIRES: nothing else writes yet.
  Status replay_journals(Revision revision);
  Status start_above(const std::optional<Marks>& marks, Revision& revision);

  std::unique_ptr<rocksdb::Env> env_;  // before db_: it outlives it
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  ColumnFamilies cf_{};
  LedgerOptions options_;
  Token token_floor_ = 0;
  std::string recovery_note_;
  std::unique_ptr<GroupWriter> writer_;
};

}  // namespace tenure::storage
