#include "storage/ledger.hpp"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>

#include <algorithm>

#include "storage/codec.hpp"

namespace tenure::storage {
namespace {

// 2: the revision lives only in the event log, live tenures only in the lease row. A schema-1
// ledger reads correctly as schema 2 and is marked 2, so that an older tenured refuses it.
constexpr const char* kSchemaVersion = "2";
constexpr const char* kUpgradableSchema = "1";

bool read_meta(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const char* name,
               std::uint64_t& value, std::string& error) {
  std::string bytes;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cf, name, &bytes);
  if (s.IsNotFound()) {
    value = 0;
    return true;
  }
  if (!s.ok()) {
    error = s.ToString();
    return false;
  }
  value = from_big_endian(bytes);
  return true;
}

// The revision is the newest event's: every revision is an event, and trimming the log always
// keeps the newest. (Ledgers of schema 1 also kept it in meta; `revision` starts from that.)
bool read_last_revision(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* events, Revision& revision,
                        std::string& error) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), events));
  it->SeekToLast();
  if (it->Valid()) revision = std::max(revision, from_big_endian(it->key().ToStringView()));
  if (!it->status().ok()) {
    error = it->status().ToString();
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<Ledger> Ledger::open(const LedgerOptions& options, std::string& error) {
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 4;
  db_options.max_total_wal_size = 256ull << 20;
  if (options.env != nullptr) db_options.env = options.env;

  // Memtables are capped in total so that the daemon's memory is the leases', not RocksDB's.
  db_options.db_write_buffer_size = 16ull << 20;

  rocksdb::ColumnFamilyOptions cf_options;
  cf_options.write_buffer_size = 16ull << 20;
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  // Events are appended in revision order: a remembered insert position makes each insert O(1)
  // instead of a skiplist search. RocksDB honours the hint only without concurrent memtable
  // writes, which the single group writer never needs.
  db_options.allow_concurrent_memtable_write = false;
  rocksdb::ColumnFamilyOptions event_options = cf_options;
  event_options.memtable_insert_with_hint_prefix_extractor.reset(
      rocksdb::NewFixedPrefixTransform(1));

  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, cf_options},
      {"leases", cf_options},
      {"tenures", cf_options},
      {"events", event_options},
      {"meta", cf_options},
  };
  std::unique_ptr<Ledger> ledger(new Ledger());
  ledger->options_ = options;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(db_options, options.path, families, &ledger->handles_, &raw);
  if (!s.ok()) {
    error = s.ToString();
    if (s.IsIOError() && error.find("lock") != std::string::npos) {
      error = "the data dir is in use by another tenured (" + error + ")";
    }
    return nullptr;
  }
  ledger->db_.reset(raw);
  ledger->cf_ = ColumnFamilies{ledger->handles_[1], ledger->handles_[2], ledger->handles_[3],
                               ledger->handles_[4]};

  std::string schema;
  s = raw->Get(rocksdb::ReadOptions(), ledger->cf_.meta, "schema", &schema);
  if (s.IsNotFound() || (s.ok() && schema == kUpgradableSchema)) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = raw->Put(wo, ledger->cf_.meta, "schema", kSchemaVersion);
  } else if (s.ok() && schema != kSchemaVersion) {
    error = "unsupported ledger schema version " + schema;
    return nullptr;
  }
  if (!s.ok()) {
    error = s.ToString();
    return nullptr;
  }
  std::uint64_t revision = 0, oldest = 0;
  if (!read_meta(raw, ledger->cf_.meta, "revision", revision, error) ||
      !read_meta(raw, ledger->cf_.meta, "oldest_revision", oldest, error) ||
      !read_last_revision(raw, ledger->cf_.events, revision, error)) {
    return nullptr;
  }
  WriterConfig config{options.sync, std::max<std::size_t>(options.history_keep, 1),
                      std::max<std::uint64_t>(options.events_keep, 1)};
  ledger->writer_ = std::make_unique<GroupWriter>(raw, ledger->cf_, config, revision, oldest);
  return ledger;
}

Ledger::~Ledger() {
  if (writer_) writer_->stop();
  if (db_) {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    db_->Close().PermitUncheckedError();  // nothing left to do if closing fails
  }
}

namespace {

LoadedState decode_or_quarantine(std::string_view bytes, Revision revision) {
  if (auto state = decode_state(bytes)) return LoadedState{std::move(*state), false};
  // Every tenure start is an event, so no token of this key can exceed the revision.
  KeyState safe;
  safe.last_token = revision;
  return LoadedState{std::move(safe), true};
}

}  // namespace

std::optional<LoadedState> Ledger::load(std::string_view key, std::string& error) const {
  std::string bytes;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_.leases, key, &bytes);
  if (s.IsNotFound()) return LoadedState{};
  if (!s.ok()) {
    error = s.ToString();
    return std::nullopt;
  }
  return decode_or_quarantine(bytes, revision());
}

bool Ledger::scan_leases(const std::function<void(std::string, LoadedState)>& visit,
                         std::string& error) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_.leases));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    LoadedState loaded = decode_or_quarantine(it->value().ToStringView(), revision());
    if (loaded.state.lease || loaded.corrupt || loaded.state.lock_until != 0) {
      visit(it->key().ToString(), std::move(loaded));
    }
  }
  if (!it->status().ok()) {
    error = it->status().ToString();
    return false;
  }
  return true;
}

std::vector<LeaseRow> Ledger::list(std::string_view prefix, std::string_view after,
                                   std::size_t limit, Millis now, bool& more) const {
  std::vector<LeaseRow> rows;
  more = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_.leases));
  std::string start = std::max(std::string(prefix), std::string(after));
  for (it->Seek(start); it->Valid(); it->Next()) {
    std::string_view key = it->key().ToStringView();
    if (!key.starts_with(prefix)) break;
    if (!after.empty() && key <= after) continue;
    auto state = decode_state(it->value().ToStringView());
    if (!state || !state->lease || !state->lease->live_at(now)) continue;
    if (rows.size() == limit) {
      more = true;
      break;
    }
    rows.push_back(LeaseRow{std::string(key), std::move(*state->lease)});
  }
  return rows;
}

std::vector<TenureRecord> Ledger::history(std::string_view key, Token before_token,
                                          std::size_t limit, bool& more) const {
  std::vector<TenureRecord> out;
  more = false;
  // One snapshot: the lease row and the ended tenures must agree on which tenure is live.
  const rocksdb::Snapshot* snapshot = db_->GetSnapshot();
  rocksdb::ReadOptions read;
  read.snapshot = snapshot;
  auto in_range = [&](Token token) { return before_token == 0 || token < before_token; };
  // The live tenure is the newest and has no row of its own (see GroupWriter::commit).
  Token live_token = 0;
  std::string row_bytes;
  if (db_->Get(read, cf_.leases, key, &row_bytes).ok()) {
    auto state = decode_state(row_bytes);
    if (state && state->lease && in_range(state->lease->token)) {
      const Lease& lease = *state->lease;
      live_token = lease.token;
      if (limit == 0) {
        more = true;
      } else {
        out.push_back(TenureRecord{
            lease.token, lease.owner, lease.acquired_at, std::nullopt, std::nullopt, {}});
      }
    }
  }
  std::string prefix = tenure_row_prefix(key);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read, cf_.tenures));
  it->SeekForPrev(tenure_row_key(key, before_token == 0 ? ~Token{0} : before_token - 1));
  for (; it->Valid() && !more; it->Prev()) {
    std::string_view row = it->key().ToStringView();
    if (!row.starts_with(prefix) || row.size() != prefix.size() + 8) break;
    Token token = from_big_endian(row.substr(prefix.size()));
    if (token == live_token) continue;  // a schema-1 start record
    auto record = decode_tenure(it->value().ToStringView(), token);
    if (!record) continue;
    if (out.size() == limit) {
      more = true;
      break;
    }
    out.push_back(std::move(*record));
  }
  it.reset();
  db_->ReleaseSnapshot(snapshot);
  return out;
}

std::vector<Event> Ledger::events_from(Revision from, std::size_t limit) const {
  std::vector<Event> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_.events));
  for (it->Seek(big_endian(from)); it->Valid() && out.size() < limit; it->Next()) {
    Revision revision = from_big_endian(it->key().ToStringView());
    if (auto event = decode_event(it->value().ToStringView(), revision)) {
      out.push_back(std::move(*event));
    }
  }
  return out;
}

std::size_t Ledger::compact_history(Millis now) {
  Millis cutoff = now - options_.history_max_age;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_.tenures));
  rocksdb::WriteBatch wb;
  std::size_t dropped = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view row = it->key().ToStringView();
    if (row.size() < 9) continue;
    auto record = decode_tenure(it->value().ToStringView(), 0);
    if (record && record->ended_at && *record->ended_at < cutoff) {
      if (wb.Delete(cf_.tenures, it->key()).ok()) ++dropped;
    }
  }
  if (dropped == 0) return 0;
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  return db_->Write(wo, &wb).ok() ? dropped : 0;
}

}  // namespace tenure::storage
