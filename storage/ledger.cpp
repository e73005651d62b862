#include "storage/ledger.hpp"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include "storage/codec.hpp"
#include "storage/info_log.hpp"
#include "storage/ledger_fs.hpp"
#include "storage/lost_rows.hpp"
#include "storage/wal_format.hpp"
#include "storage/wal_replay.hpp"
#include "storage/wal_tail.hpp"

namespace tenure::storage {
namespace {

// 2: the revision lives only in the event log, live tenures only in the lease row.
// 3: lease and tenure rows are written at checkpoints; above meta/checkpoint, the events'
// journals hold them. A schema-1 or -2 ledger reads correctly as schema 3 (checkpointed at its
// revision) and is marked 3, so that an older tenured refuses it.
constexpr const char* kSchemaVersion = "3";
bool upgradable(const std::string& schema) { return schema == "1" || schema == "2"; }

Status read_meta(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const char* name,
                 std::uint64_t& value) {
  std::string bytes;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cf, name, &bytes);
  value = s.ok() ? from_big_endian(bytes) : 0;
  return s.IsNotFound() ? Status() : Status::from(s);
}

// The revision is the newest event's: every revision is an event, and trimming the log always
// keeps the newest. (Ledgers of schema 1 also kept it in meta; `revision` starts from that.)
Status read_last_revision(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* events,
                          Revision& revision) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), events));
  it->SeekToLast();
  if (it->Valid()) revision = std::max(revision, from_big_endian(it->key().ToStringView()));
  return Status::from(it->status());
}

// The newest write-ahead log of the ledger: where damage that RocksDB reports without a file
// name (a torn or corrupted WAL) is.
std::string newest_wal(const std::string& path) {
  std::vector<std::string> wals;
  if (!wal::list_wals(path, wals).ok() || wals.empty()) return "";
  return wals.back();
}

// Whether the ledger directory holds table files or written WALs: a ledger, even without its
// CURRENT file. (An open would take it for a new ledger, and write an empty one over it.)
bool holds_ledger_data(const std::string& path) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    auto extension = entry.path().extension();
    if (extension == ".sst" || (extension == ".log" && entry.file_size(ec) > 0)) return true;
  }
  return false;
}

Status damaged(const LedgerOptions& options, const std::string& what) {
  if (options.mode == OpenMode::taken) {
    // It shares its table files with the ledger (hard links): their damage is the ledger's.
    return Status(errc::damaged_ledger,
                  "the backup just taken in " + options.path +
                      " is damaged, so it was removed: " + what +
                      ". If a table file is named, the ledger's own copy of it is damaged too "
                      "(see docs/operations.md, \"Damaged ledger\").");
  }
  if (options.mode == OpenMode::restored) {
    return Status(errc::damaged_ledger, "the backup in " + options.path + " is damaged: " + what +
                                            ". tenured will not restore it (nothing was "
                                            "changed); restore another backup.");
  }
  return Status(errc::damaged_ledger,
                "the ledger in " + options.path + " is damaged: " + what +
                    ". It cannot be recovered completely, so tenured will not open it (nothing "
                    "was changed). Start once with --recover to keep what can be read and go on "
                    "above every revision and token issued before (see docs/operations.md, "
                    "\"Damaged ledger\").");
}

// RocksDB wraps a missing table file in layers of status prefixes and, having looked for it under
// its old .ldb name too, names that one.
std::string missing_file(std::string text) {
  constexpr std::string_view kOpening = "While open a file for random read: ";
  if (auto from = text.find(kOpening); from != std::string::npos) {
    text.erase(0, from + kOpening.size());
  }
  if (auto ldb = text.find(".ldb: No such file"); ldb != std::string::npos) {
    text.replace(ldb, 4, ".sst");
  }
  return "a file is missing: " + text;
}

// An open that failed: damage (corruption, a missing file) or something else (the lock, the disk).
Status classify_open_failure(const LedgerOptions& options, const rocksdb::Status& s) {
  std::string text = s.ToString();
  if (s.IsIOError() && text.find("lock") != std::string::npos) {
    return Status(errc::in_use, "the data dir is in use by another tenured (" + text + ")");
  }
  if (text.find("No such file") != std::string::npos) return damaged(options, missing_file(text));
  if (s.IsCorruption()) {
    bool names_file =
        text.find(".sst") != std::string::npos || text.find("MANIFEST") != std::string::npos;
    std::string wal = newest_wal(options.path);
    return damaged(options, names_file || wal.empty() ? text : text + " (newest WAL: " + wal + ")");
  }
  if (s.IsPathNotFound()) return damaged(options, missing_file(text));
  return Status::from(s);
}

rocksdb::Options make_options(const LedgerOptions& options, rocksdb::Env* env) {
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 4;
  db_options.max_total_wal_size = 256ull << 20;
  db_options.env = env;
  db_options.info_log = make_info_log();
  // A record cut off at the very end of the newest WAL is what a crash leaves of a write that
  // was never acknowledged; anything else wrong in a WAL (a checksum, a record in the middle)
  // refuses the open. A tail cut off that held acknowledged writes is caught by the marks.
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  if (options.mode == OpenMode::recover) {
    db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kSkipAnyCorruptedRecords;
  }
  // A backup's WALs were synced whole when it was made: nothing in them may be cut off.
  if (options.mode == OpenMode::restored || options.mode == OpenMode::taken) {
    db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kAbsoluteConsistency;
  }
  db_options.paranoid_checks = true;
  // Table files (flushes, compactions) are written back a MiB at a time, not all at their
  // final sync: that burst of writeback queued every WAL sync behind it, and a commit then took
  // up to 130 ms instead of under one (docs/benchmarks.md, the open-loop row).
  db_options.bytes_per_sync = 1ull << 20;

  // Memtables are capped in total so that the daemon's memory is the leases', not RocksDB's.
  db_options.db_write_buffer_size = 16ull << 20;
  return db_options;
}

std::vector<rocksdb::ColumnFamilyDescriptor> families() {
  rocksdb::ColumnFamilyOptions cf_options;
  cf_options.write_buffer_size = 16ull << 20;
  // The first two levels take every flush and most compactions, and snappy there was ~6% of the
  // daemon's CPU at 50 x 16 (docs/benchmarks.md): they stay uncompressed; deeper levels, where
  // history settles, are compressed.
  cf_options.compression_per_level = {rocksdb::kNoCompression, rocksdb::kNoCompression};
  cf_options.compression_per_level.resize(cf_options.num_levels, rocksdb::kSnappyCompression);
  // Bloom filters serve point lookups, which only `leases` (a cold key's row) and `meta` get:
  // `events` and `tenures` are only scanned, and building their filters at every flush and
  // compaction was work for nothing. Both kinds of table share one block cache (RocksDB's
  // default size), as one factory had.
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(8ull << 20);
  std::shared_ptr<rocksdb::TableFactory> unfiltered(rocksdb::NewBlockBasedTableFactory(table));
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  // Events are appended in revision order, and checkpoints write lease and tenure rows in key
  // order: a remembered insert position starts each insert next to the one before instead of
  // at the skiplist's top. RocksDB honours the hint only without concurrent memtable writes,
  // which the single group writer never needs (see make_options).
  rocksdb::ColumnFamilyOptions leases = cf_options;
  leases.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(1));
  rocksdb::ColumnFamilyOptions scanned = leases;
  scanned.table_factory = unfiltered;

  return {
      {rocksdb::kDefaultColumnFamilyName, cf_options},
      {"leases", leases},
      {"tenures", scanned},
      {"events", scanned},
      {"meta", cf_options},
  };
}

}  // namespace

namespace {

// Reads the journals of the events above the checkpoint (meta/checkpoint) in order: `visit`
// sees each op's event and journal. An event that cannot be decoded is `on_bad`'s status, or
// skipped when that is ok (a recovery). A ledger older than schema 3 has no journals.
Status read_journals(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* events,
                     rocksdb::ColumnFamilyHandle* meta,
                     const std::function<void(const Event&, Journal&)>& visit,
                     const std::function<Status(Revision)>& on_bad,
                     const std::function<Status(Revision, Revision)>& on_gap = nullptr) {
  std::string schema;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, "schema", &schema);
  if (s.IsNotFound() || (s.ok() && schema != kSchemaVersion)) return {};
  if (!s.ok()) return Status::from(s);
  std::uint64_t checkpoint = 0;
  if (Status st = read_meta(db, meta, kCheckpointKey, checkpoint); !st.ok()) return st;
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, events));
  Journal journal;
  Revision expected = checkpoint + 1;
  for (it->Seek(big_endian(checkpoint + 1)); it->Valid(); it->Next()) {
    Revision revision = from_big_endian(it->key().ToStringView());
    auto event = decode_event(it->value().ToStringView(), revision, &journal);
    Revision missing_from = expected;
    expected = revision + 1;
    if (!event) {
      if (Status st = on_bad(revision); !st.ok()) return st;
      continue;
    }
    // Above the checkpoint the log is whole (never trimmed there), but for the revisions a
    // recovery jumped over, which its `recovered` event ends.
    if (on_gap && revision > missing_from && event->type != EventType::recovered) {
      if (Status st = on_gap(missing_from, revision - 1); !st.ok()) return st;
    }
    if (journal.present) visit(*event, journal);
  }
  return Status::from(it->status());
}

// Looks for damage without changing anything: a read-only open replays the WALs into memory only
// (a writable open would flush what it read and delete the damaged WAL), then every table file
// is read and checked, and the revision compared with the durable mark.
Status check_for_damage(const LedgerOptions& options, const std::optional<Marks>& marks) {
  if (!std::filesystem::exists(options.path + "/CURRENT")) return {};  // a new ledger
  rocksdb::Options db_options =
      make_options(options, options.env ? options.env : rocksdb::Env::Default());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::OpenForReadOnly(db_options, options.path, families(), &handles, &raw);
  if (!s.ok()) return classify_open_failure(options, s);
  std::unique_ptr<rocksdb::DB> db(raw);
  Status status;
  if (!options.skip_verify) {
    // Table files are read only when needed; a damaged one must stop the start, not a request
    // (or a watch's replay) hours later.
    s = db->VerifyChecksum();
    if (!s.ok()) status = damaged(options, s.ToString());
  }
  Revision revision = 0;
  if (status.ok()) status = read_last_revision(db.get(), handles[3], revision);
  if (status.ok()) {
    // The rows above the checkpoint exist only in the events' journals: one that cannot be read
    // is an acknowledged change lost.
    status = read_journals(
        db.get(), handles[3], handles[4], [](const Event&, Journal&) {},
        [&](Revision bad) {
          return damaged(options, "the event at revision " + std::to_string(bad) +
                                      ", above the last checkpoint, cannot be decoded");
        },
        [&](Revision from, Revision to) {
          std::string wal = newest_wal(options.path);
          return damaged(options, "the events of revisions " + std::to_string(from) + " to " +
                                      std::to_string(to) +
                                      ", above the last checkpoint, are missing: a WAL that held "
                                      "them is lost or damaged" +
                                      (wal.empty() ? "" : " (newest WAL: " + wal + ")"));
        });
  }
  if (status.ok() && marks && revision < marks->durable) {
    std::string wal = newest_wal(options.path);
    std::string source = options.mode == OpenMode::taken ? "in the ledger when the backup began"
                                                         : "(" + options.marks_path + ")";
    status = damaged(options, "it ends at revision " + std::to_string(revision) + " but revision " +
                                  std::to_string(marks->durable) + " was durable " + source +
                                  "; acknowledged changes are missing" +
                                  (wal.empty() ? "" : " (newest WAL: " + wal + ")"));
  }
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  db->Close().PermitUncheckedError();  // read-only: nothing to lose
  return status;
}

}  // namespace

Status Ledger::open_db(rocksdb::Options db_options, bool orphaned) {
  db_options.allow_concurrent_memtable_write = false;
  auto cfs = families();
  auto open = [&] {
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(db_options, options_.path, cfs, &handles_, &raw);
    db_.reset(raw);
    return s;
  };
  // Without its CURRENT file, an open would make a new, empty ledger beside the old files; after
  // a repair that did not finish, it would take the repair's empty MANIFEST for the ledger: a
  // recovery repairs at once.
  const bool repair_first =
      orphaned || (options_.mode == OpenMode::recover && repair_marked(options_.path));
  rocksdb::Status s =
      repair_first ? rocksdb::Status::Incomplete("the ledger needs a repair first") : open();
  if (options_.mode == OpenMode::recover) {
    // The open replayed every WAL record it could read (skipping corrupted ones) and flushed
    // them into table files. A table file that cannot be read, or a missing one, needs a repair:
    // it rebuilds the manifest from the table files it can read; unreadable ones go to lost/.
    // It cannot replay WALs (see wal_replay.hpp): they are set aside, and replayed after it.
    if (s.ok()) s = db_->VerifyChecksum();
    if (!s.ok()) {
      close_db();
      if (Status marked = mark_repair(options_.path); !marked.ok()) return marked;
      if (Status aside = set_aside_wals(options_.path); !aside.ok()) return aside;
      s = rocksdb::RepairDB(options_.path, db_options, cfs);
      if (s.ok()) s = open();
      if (s.ok()) {
        if (Status cleared = clear_repair_mark(options_.path); !cleared.ok()) return cleared;
      }
    }
  }
  if (!s.ok()) {
    close_db();
    return classify_open_failure(options_, s);
  }
  cf_ = ColumnFamilies{handles_[1], handles_[2], handles_[3], handles_[4]};
  return {};
}

void Ledger::close_db() {
  if (!db_) return;
  for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  handles_.clear();
  db_->Close().PermitUncheckedError();  // nothing left to do if closing fails
  db_.reset();
}

Status Ledger::check_schema(Revision revision) {
  std::string schema;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_.meta, "schema", &schema);
  if (s.IsNotFound() || (s.ok() && upgradable(schema))) {
    // Every row of an older (or a new) ledger is in its column family: checkpointed as it is.
    rocksdb::WriteBatch wb;
    s = wb.Put(cf_.meta, "schema", kSchemaVersion);
    if (s.ok()) s = wb.Put(cf_.meta, kCheckpointKey, big_endian(revision));
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (s.ok()) s = db_->Write(wo, &wb);
  } else if (s.ok() && schema != kSchemaVersion) {
    return Status(errc::unsupported_schema, "unsupported ledger schema version " + schema);
  }
  return Status::from(s);
}

Status Ledger::replay_journals(Revision revision) {
  rocksdb::WriteBatch wb;
  rocksdb::Status s;
  std::string row_key, value;
  const std::size_t keep = std::max<std::size_t>(options_.history_keep, 1);
  std::uint64_t replayed = 0, skipped = 0;
  Status status = read_journals(
      db_.get(), cf_.events, cf_.meta,
      [&](const Event& event, Journal& journal) {
        ++replayed;
        if (journal.row && s.ok()) s = wb.Put(cf_.leases, event.key, *journal.row);
        for (const TenureRecord& t : journal.tenures) {
          tenure_row_key(event.key, t.token, row_key);
          encode_tenure(t, value);
          if (s.ok()) s = wb.Put(cf_.tenures, row_key, value);
          if (t.token <= keep) continue;
          tenure_row_key(event.key, t.token - keep, row_key);
          if (s.ok()) s = wb.Delete(cf_.tenures, row_key);
        }
      },
      [&](Revision bad) {
        if (options_.mode == OpenMode::normal) {
          return damaged(options_, "the event at revision " + std::to_string(bad) +
                                       ", above the last checkpoint, cannot be decoded");
        }
        // A recovery goes on above every token issued (start_above): a lost row cannot
        // reissue one.
        ++skipped;
        spdlog::warn("skipping the undecodable event at revision {} while replaying", bad);
        return Status();
      });
  if (!status.ok()) return status;
  if (s.ok()) s = wb.Put(cf_.meta, kCheckpointKey, big_endian(revision));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  if (s.ok()) s = db_->Write(wo, &wb);
  if (s.ok() && replayed + skipped > 0) {
    spdlog::info("rebuilt the rows of {} ops from the event log ({} undecodable events skipped)",
                 replayed, skipped);
  }
  return Status::from(s);
}

// Recovery and restore start above every revision (and so every token) that can have been
// issued: the reserved mark, what the ledger holds, and what the operator says.
Status Ledger::start_above(const std::optional<Marks>& marks, Revision& revision) {
  if (!marks && options_.revision_floor == 0) {
    return Status(errc::damaged_ledger,
                  "the marks file " + options_.marks_path +
                      " is missing, so the highest revision issued is unknown; pass "
                      "--revision-floor N with N at least the last revision the server "
                      "reported (see docs/operations.md)");
  }
  Revision floor = std::max({marks ? marks->reserved : 0, revision, options_.revision_floor});
  std::uint64_t old_floor = 0;
  if (Status st = read_meta(db_.get(), cf_.meta, "token_floor", old_floor); !st.ok()) return st;
  floor = std::max<Revision>(floor, old_floor);
  Revision event_revision = floor + 1;
  if (Status st = write_marks(options_.marks_path, Marks{event_revision + kRevisionBlock, 0});
      !st.ok()) {
    return st;
  }
  Event event;
  event.type = EventType::recovered;
  event.revision = event_revision;
  event.at = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  event.token = floor;
  recovery_note_ =
      (options_.mode == OpenMode::recover ? "recovered a damaged ledger" : "restored a backup") +
      std::string(": revision ") + std::to_string(revision) + " read, restarting at " +
      std::to_string(event_revision) + ", every new token above " + std::to_string(floor);
  // What the damage took of the acknowledged changes, as far as the marks know (a restore's
  // backup is older than the marks by design: not a loss to report).
  if (options_.mode == OpenMode::recover && marks && marks->durable > revision) {
    recovery_note_ += "; the changes of revisions " + std::to_string(revision + 1) + " to " +
                      std::to_string(marks->durable) + ", acknowledged, were lost";
  }
  rocksdb::WriteBatch wb;
  rocksdb::Status s = wb.Put(cf_.meta, "token_floor", big_endian(floor));
  if (s.ok()) s = wb.Put(cf_.events, big_endian(event_revision), encode_event(event));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  if (s.ok()) s = db_->Write(wo, &wb);
  if (!s.ok()) return Status::from(s);
  revision = event_revision;
  return {};
}

Status Ledger::check_backup(const std::string& dir) {
  LedgerOptions options;
  options.path = dir;
  options.mode = OpenMode::restored;
  return check_for_damage(options, std::nullopt);
}

std::unique_ptr<Ledger> Ledger::open(const LedgerOptions& options, Status& status) {
  std::unique_ptr<Ledger> ledger(new Ledger());
  ledger->options_ = options;
  if (ledger->options_.marks_path.empty()) ledger->options_.marks_path = options.path + ".marks";
  const LedgerOptions& o = ledger->options_;
  std::optional<Marks> marks;
  status = read_marks(o.marks_path, marks);
  if (!status.ok()) return nullptr;
  // A recovery or restore that stopped half way left a ledger that may be half repaired, and
  // did not start above the revisions issued: only running it again may open it.
  std::optional<std::string> interrupted;
  status = read_recovery_mark(o.path, interrupted);
  if (!status.ok()) return nullptr;
  if (o.mode == OpenMode::normal && interrupted) {
    status = Status(errc::damaged_ledger,
                    "the ledger in " + o.path + " was being recovered (" + *interrupted +
                        ") when tenured stopped, and the recovery did not finish: it may be half "
                        "repaired, and nothing was moved above the revisions and tokens issued "
                        "before. Start once more with " +
                        *interrupted + " (see docs/operations.md, \"Damaged ledger\").");
    return nullptr;
  }
  const bool existing = std::filesystem::exists(o.path + "/CURRENT");
  const bool orphaned = !existing && holds_ledger_data(o.path);
  if (o.mode == OpenMode::normal && orphaned) {
    status = damaged(o, "its CURRENT file is missing, and its other files are there");
    return nullptr;
  }
  if (o.mode == OpenMode::normal && existing && !marks) {
    status = damaged(o, "its marks file " + o.marks_path +
                            " is missing, so the highest revision and token issued are "
                            "unknown, and would be issued again if the ledger's newest records "
                            "were lost too (pass --revision-floor N with --recover, N at least "
                            "the last revision clients saw)");
    return nullptr;
  }
  if (o.mode == OpenMode::normal && !existing && !marks) {
    // Before the ledger exists: from now on a ledger without its marks file lost it. (A
    // recovery without either must be told the floor: see start_above.)
    status = write_marks(o.marks_path, Marks{});
    if (!status.ok()) return nullptr;
  }
  if (o.mode == OpenMode::recover) {
    status = mark_recovery(o.path, "--recover");
    if (!status.ok()) return nullptr;
  }
  // A ledger that ever started reserved revisions (its durable mark may still be 0 if it ran for
  // under a second): without its files, a new one would issue them again.
  if (o.mode == OpenMode::normal && marks && marks->reserved > 0 && !existing) {
    status = damaged(
        o, "its files are missing, and " +
               (marks->durable > 0 ? "revision " + std::to_string(marks->durable) + " was durable"
                                   : "revisions up to " + std::to_string(marks->reserved) +
                                         " may have been issued") +
               " (" + o.marks_path + ")");
    return nullptr;
  }
  // A backup's WALs were synced whole when it was made: a record cut short there is damage (a
  // restore checked the backup before it put it in place), never a crash's.
  std::uint64_t cut = 0;
  std::string cut_off;
  status = o.mode == OpenMode::restored ? Status() : cut_wal_tails(o.path, cut, &cut_off);
  if (!status.ok()) return nullptr;
  // RocksDB would take it for a crash's tail and drop its record silently, with the synced
  // writes in it: tokens and revisions would be issued again.
  if (o.mode == OpenMode::normal && !cut_off.empty()) {
    status = damaged(o, "the WAL " + cut_off +
                            " ends in a record cut off by the end of the file, which a crash does "
                            "not leave; acknowledged changes are missing");
    return nullptr;
  }
  if (o.mode == OpenMode::normal) {
    status = check_for_damage(o, marks);
    if (!status.ok()) return nullptr;
  }
  rocksdb::Env* base = o.env ? o.env : rocksdb::Env::Default();
  ledger->env_ = rocksdb::NewCompositeEnv(ledger_file_system(base->GetFileSystem()));
  status = ledger->open_db(make_options(o, ledger->env_.get()), orphaned);
  if (!status.ok()) return nullptr;
  WalReplay replayed;
  if (o.mode == OpenMode::recover) {
    status = replay_set_aside_wals(ledger->db_.get(), ledger->handles_, o.path, replayed);
    if (!status.ok()) return nullptr;
  }
  std::uint64_t revision = 0, oldest = 0, token_floor = 0;
  for (Status st : {read_meta(ledger->db_.get(), ledger->cf_.meta, "revision", revision),
                    read_meta(ledger->db_.get(), ledger->cf_.meta, kOldestKey, oldest),
                    read_last_revision(ledger->db_.get(), ledger->cf_.events, revision)}) {
    if (!st.ok()) {
      status = st;
      return nullptr;
    }
  }
  status = ledger->check_schema(revision);
  if (!status.ok()) return nullptr;
  // After a crash, the rows changed since the last checkpoint are in the events' journals.
  status = ledger->replay_journals(revision);
  if (!status.ok()) return nullptr;
  std::uint64_t rebuilt = 0;
  if (o.mode == OpenMode::recover) {
    status = rebuild_lost_rows(ledger->db_.get(), ledger->cf_, rebuilt);
    if (!status.ok()) return nullptr;
  }
  if (o.mode != OpenMode::normal) {
    status = ledger->start_above(marks, revision);
    if (status.ok()) status = clear_recovery_mark(o.path);
    if (!status.ok()) return nullptr;
    if (replayed.batches > 0 || replayed.damaged > 0) {
      ledger->recovery_note_ += "; " + std::to_string(replayed.batches) +
                                " WAL writes replayed after the repair of the table files";
      if (replayed.damaged > 0) {
        ledger->recovery_note_ += " (" + std::to_string(replayed.damaged) + " damaged, skipped)";
      }
    }
    if (rebuilt > 0) {
      ledger->recovery_note_ +=
          "; " + std::to_string(rebuilt) + " lost lease rows rebuilt from the event log";
    }
  }
  status = read_meta(ledger->db_.get(), ledger->cf_.meta, "token_floor", token_floor);
  if (!status.ok()) return nullptr;
  ledger->token_floor_ = token_floor;
  Revision reserved = marks && o.mode == OpenMode::normal ? marks->reserved : 0;
  WriterConfig config{options.sync,
                      std::max<std::size_t>(options.history_keep, 1),
                      std::max<std::uint64_t>(options.events_keep, 1),
                      o.marks_path,
                      std::max<std::uint64_t>(options.checkpoint_ops, 1),
                      options.checkpoint_every,
                      options.gather_max};
  ledger->writer_ =
      std::make_unique<GroupWriter>(ledger->db_.get(), ledger->cf_, config, revision, oldest);
  // Reserves the first block now (and records the revision as durable): a start on a full disk
  // fails here, with a clear error, not at the first write.
  status = ledger->writer_->start(reserved);
  if (!status.ok()) return nullptr;
  return ledger;
}

Ledger::~Ledger() {
  if (writer_) writer_->stop();
  close_db();
}

// Reads see the durable state only: with sync on, the memtables run ahead of the disk while a
// WAL sync is under way (see GroupWriter). The snapshot lives as long as the read.
// The rows no checkpoint has written yet are read with it (`look`), and win over the snapshot's.
struct Ledger::DurableRead {
  explicit DurableRead(const GroupWriter& writer) : snapshot(writer.durable_snapshot()) {
    options.snapshot = snapshot.get();
  }
  template <typename Look>
  DurableRead(const GroupWriter& writer, Look&& look)
      : snapshot(writer.durable_view(std::forward<Look>(look))) {
    options.snapshot = snapshot.get();
  }
  std::shared_ptr<const rocksdb::Snapshot> snapshot;
  rocksdb::ReadOptions options;
};

// The start-up scans read each row once: they do not fill the block cache.
Ledger::DurableRead Ledger::scan_once() const {
  DurableRead read(*writer_);
  read.options.fill_cache = false;
  return read;
}

Status Ledger::load(std::string_view key, LoadedState& loaded) const {
  std::string bytes;
  bool dirty = false;
  DurableRead read(*writer_, [&](const DirtyRows& rows) {
    const DirtyKey* d = rows.find(key);
    if (d && d->row) {
      bytes = *d->row;
      dirty = true;
    }
  });
  rocksdb::Status s =
      dirty ? rocksdb::Status::OK() : db_->Get(read.options, cf_.leases, key, &bytes);
  if (s.IsNotFound()) {
    loaded = LoadedState{};
    return {};
  }
  if (!s.ok()) return Status::from(s);
  loaded = decode_or_quarantine(bytes, revision());
  return {};
}

Status Ledger::scan_leases(const std::function<void(std::string, LoadedState)>& visit) const {
  std::map<std::string, std::string, std::less<>> dirty;
  DurableRead read(*writer_, [&](const DirtyRows& rows) {
    rows.for_each([&](const DirtyRows::Map::value_type& entry) {
      if (entry.second.row) dirty.emplace(entry.first, *entry.second.row);
    });
  });
  read.options.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read.options, cf_.leases));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (dirty.contains(it->key().ToStringView())) continue;
    LoadedState loaded = decode_or_quarantine(it->value().ToStringView(), revision());
    if (needs_recovery(loaded)) visit(it->key().ToString(), std::move(loaded));
  }
  for (auto& [key, row] : dirty) {
    LoadedState loaded = decode_or_quarantine(row, revision());
    if (needs_recovery(loaded)) visit(key, std::move(loaded));
  }
  return Status::from(it->status());
}

Status Ledger::list(std::string_view prefix, std::string_view after, std::size_t limit, Millis now,
                    std::vector<LeaseRow>& rows, bool& more) const {
  rows.clear();
  more = false;
  std::string start = std::max(std::string(prefix), std::string(after));
  auto in_range = [&](std::string_view key) {
    return key.starts_with(prefix) && (after.empty() || key > after);
  };
  // The rows no checkpoint has written yet, in key order, up to the (limit + 1)th live one:
  // the page ends before any after it.
  std::vector<std::pair<std::string, std::string>> dirty;
  DurableRead read(*writer_, [&](const DirtyRows& d) {
    std::vector<const DirtyRows::Map::value_type*> in_page;
    d.for_each([&](const DirtyRows::Map::value_type& entry) {
      if (entry.second.row && in_range(entry.first)) in_page.push_back(&entry);
    });
    std::sort(in_page.begin(), in_page.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    std::size_t live = 0;
    for (const auto* entry : in_page) {
      if (live > limit) break;
      auto state = decode_state(*entry->second.row);
      if (state && state->lease && state->lease->live_at(now)) ++live;
      dirty.emplace_back(entry->first, *entry->second.row);
    }
  });
  // Adds a row to the page; false when the page is full.
  auto add = [&](std::string_view key, std::string_view bytes) {
    auto state = decode_state(bytes);
    if (!state || !state->lease || !state->lease->live_at(now)) return true;
    if (rows.size() == limit) {
      more = true;
      return false;
    }
    rows.push_back(LeaseRow{std::string(key), std::move(*state->lease)});
    return true;
  };
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read.options, cf_.leases));
  it->Seek(start);
  auto next_dirty = dirty.begin();
  for (;;) {
    bool stored = it->Valid() && it->key().ToStringView().starts_with(prefix);
    std::string_view key = stored ? it->key().ToStringView() : std::string_view();
    if (stored && !in_range(key)) {
      it->Next();
      continue;
    }
    if (next_dirty != dirty.end() && (!stored || next_dirty->first <= key)) {
      if (stored && next_dirty->first == key) it->Next();  // the dirty row is newer
      if (!add(next_dirty->first, next_dirty->second)) break;
      ++next_dirty;
    } else if (stored) {
      if (!add(key, it->value().ToStringView())) break;
      it->Next();
    } else {
      break;
    }
  }
  return Status::from(it->status());
}

Status Ledger::history(std::string_view key, Token before_token, std::size_t limit,
                       std::vector<TenureRecord>& out, bool& more) const {
  out.clear();
  more = false;
  // One snapshot: the lease row and the ended tenures must agree on which tenure is live. The
  // key's rows that no checkpoint has written yet win over it.
  std::optional<std::string> dirty_row;
  std::map<Token, TenureRecord, std::greater<>> dirty_tenures;
  DurableRead durable(*writer_, [&](const DirtyRows& rows) {
    const DirtyKey* d = rows.find(key);
    if (!d) return;
    dirty_row = d->row;
    for (const auto& [revision, t] : d->tenures) dirty_tenures.emplace(t.token, t);
  });
  std::shared_ptr<const rocksdb::Snapshot> snapshot = durable.snapshot;
  if (!snapshot) {
    snapshot.reset(db_->GetSnapshot(),
                   [db = db_.get()](const rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); });
  }
  rocksdb::ReadOptions read;
  read.snapshot = snapshot.get();
  auto in_range = [&](Token token) { return before_token == 0 || token < before_token; };
  // The live tenure is the newest and has no row of its own (see GroupWriter::commit).
  Token live_token = 0;
  std::string row_bytes;
  rocksdb::Status s = rocksdb::Status::OK();
  if (dirty_row) {
    row_bytes = std::move(*dirty_row);
  } else {
    s = db_->Get(read, cf_.leases, key, &row_bytes);
  }
  if (!s.ok() && !s.IsNotFound()) return Status::from(s);
  if (s.ok()) {
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
  // Ended tenures newest first: the stored ones merged with the dirty ones (which win), without
  // those a checkpoint of the dirty ones deletes (history_keep below each).
  auto dropped = [&](Token token) {
    return dirty_tenures.contains(token + std::max<std::size_t>(options_.history_keep, 1));
  };
  auto next_dirty = dirty_tenures.begin();
  auto add = [&](TenureRecord&& record) {
    if (!in_range(record.token) || record.token == live_token || dropped(record.token)) {
      return true;
    }
    if (out.size() == limit) {
      more = true;
      return false;
    }
    out.push_back(std::move(record));
    return true;
  };
  std::string prefix = tenure_row_prefix(key);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read, cf_.tenures));
  it->SeekForPrev(tenure_row_key(key, before_token == 0 ? ~Token{0} : before_token - 1));
  for (; it->Valid() && !more; it->Prev()) {
    std::string_view row = it->key().ToStringView();
    if (!row.starts_with(prefix) || row.size() != prefix.size() + 8) break;
    Token token = from_big_endian(row.substr(prefix.size()));
    for (; next_dirty != dirty_tenures.end() && next_dirty->first >= token && !more; ++next_dirty) {
      add(TenureRecord(next_dirty->second));
    }
    if (more || dirty_tenures.contains(token)) continue;  // the dirty one is newer
    auto record = decode_tenure(it->value().ToStringView(), token);
    if (record) add(std::move(*record));
  }
  for (; next_dirty != dirty_tenures.end() && !more; ++next_dirty) {
    add(TenureRecord(next_dirty->second));
  }
  return Status::from(it->status());
}

Status Ledger::events_from(Revision from, std::size_t limit, std::vector<Event>& out) const {
  out.clear();
  // Not the durable snapshot, which batches of events alone do not move: every event up to the
  // durable revision is final (a refused batch's are above it, until they are undone), and
  // none above it is read. Read first: the iterator then has them all.
  Revision durable = writer_->revision();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_.events));
  for (it->Seek(big_endian(from)); it->Valid() && out.size() < limit; it->Next()) {
    Revision revision = from_big_endian(it->key().ToStringView());
    if (revision > durable) break;
    if (auto event = decode_event(it->value().ToStringView(), revision)) {
      out.push_back(std::move(*event));
    }
  }
  return Status::from(it->status());
}

Status Ledger::compact_history(Millis now, std::size_t& dropped) {
  dropped = 0;
  Millis cutoff = now - options_.history_max_age;
  DurableRead read = scan_once();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read.options, cf_.tenures));
  rocksdb::WriteBatch wb;
  std::size_t doomed = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view row = it->key().ToStringView();
    if (row.size() < 9) continue;
    auto record = decode_tenure(it->value().ToStringView(), 0);
    if (record && record->ended_at && *record->ended_at < cutoff) {
      rocksdb::Status s = wb.Delete(cf_.tenures, it->key());
      if (!s.ok()) return Status::from(s);
      ++doomed;
    }
  }
  if (!it->status().ok()) return Status::from(it->status());
  if (doomed == 0) return {};
  Status status = writer_->write_aside(wb);
  if (status.ok()) dropped = doomed;
  return status;
}

Status Ledger::backup(const std::string& dir) const {
  // Every change durable before the copy begins is in it.
  Marks contains{0, revision()};
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  if (!s.ok()) return Status::from(s);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // Flushes the memtables first unless the WALs are small; either way the copy is consistent
  // and its WALs are synced.
  if (s = checkpoint->CreateCheckpoint(dir); !s.ok()) return Status::from(s);
  // Read through as a restore would, now rather than when the backup is needed: a damaged one
  // is removed, so that nobody keeps it as good.
  LedgerOptions check;
  check.path = dir;
  check.mode = OpenMode::taken;
  Status checked = check_for_damage(check, contains);
  if (!checked.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (ec) {
      return Status(errc::damaged_ledger,
                    checked.message() + " (removing it failed: " + ec.message() + ")");
    }
  }
  return checked;
}

}  // namespace tenure::storage
