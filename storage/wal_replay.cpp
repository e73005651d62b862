#include "storage/wal_replay.hpp"

#include <fcntl.h>
#include <rocksdb/write_batch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/unique_fd.hpp"
#include "storage/file_sync.hpp"
#include "storage/wal_format.hpp"

namespace tenure::storage {
namespace {

std::string set_aside_dir(const std::string& ledger_path) { return ledger_path + "/wal-replay"; }

Status read_file(const std::string& path, std::string& bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return os_error("cannot open", path);
  bytes.clear();
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("cannot read", path);
    if (n == 0) return {};
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
}

// Joins a WAL's fragments into its write batches. A damaged fragment costs the batch it was part
// of, and the rest of its block unless its header still says where the next one starts (RocksDB's
// kSkipAnyCorruptedRecords always drops the rest of the block). A fragment is taken only with its
// checksum right. A batch the file's end cuts short is a crash's unacknowledged write, not
// damage.
void read_batches(const std::string& bytes, std::vector<std::string>& batches,
                  std::uint64_t& damaged) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  std::string batch;
  bool in_batch = false;
  auto drop = [&] {
    if (in_batch) ++damaged;
    in_batch = false;
  };
  for (std::size_t at = 0; at < bytes.size(); at += wal::kBlock) {
    std::size_t n = std::min(wal::kBlock, bytes.size() - at);
    for (std::size_t pos = 0; pos < n;) {
      wal::Fragment f = wal::read_fragment(data + at, n, pos);
      if (f.kind == wal::Fragment::Kind::trailer) break;
      if (f.kind == wal::Fragment::Kind::bad) {
        if (f.zeros) break;  // preallocated room, not a record
        ++damaged;
        in_batch = false;
        if (!f.framed) break;
        pos += wal::kHeader + f.length;
        continue;
      }
      const char* payload = reinterpret_cast<const char*>(f.payload);
      switch (f.type) {
        case wal::FragmentType::full:
          drop();
          batches.emplace_back(payload, f.length);
          break;
        case wal::FragmentType::first:
          drop();
          batch.assign(payload, f.length);
          in_batch = true;
          break;
        case wal::FragmentType::middle:
        case wal::FragmentType::last:
          if (!in_batch) {
            ++damaged;  // its first fragment was lost
            break;
          }
          batch.append(payload, f.length);
          if (f.type == wal::FragmentType::last) {
            batches.push_back(std::move(batch));
            in_batch = false;
          }
          break;
      }
      pos += wal::kHeader + f.length;
    }
  }
}

// Copies a batch's changes into `out`, each into its family by its original id. A change to a
// family the ledger does not have is damage.
class CopyByFamilyId : public rocksdb::WriteBatch::Handler {
 public:
  CopyByFamilyId(const std::vector<rocksdb::ColumnFamilyHandle*>& by_id, rocksdb::WriteBatch& out)
      : by_id_(by_id), out_(out) {}

  rocksdb::Status PutCF(std::uint32_t id, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override {
    return id < by_id_.size() ? out_.Put(by_id_[id], key, value) : unknown(id);
  }
  rocksdb::Status DeleteCF(std::uint32_t id, const rocksdb::Slice& key) override {
    return id < by_id_.size() ? out_.Delete(by_id_[id], key) : unknown(id);
  }
  rocksdb::Status SingleDeleteCF(std::uint32_t id, const rocksdb::Slice& key) override {
    return id < by_id_.size() ? out_.SingleDelete(by_id_[id], key) : unknown(id);
  }
  rocksdb::Status DeleteRangeCF(std::uint32_t id, const rocksdb::Slice& begin,
                                const rocksdb::Slice& end) override {
    return id < by_id_.size() ? out_.DeleteRange(by_id_[id], begin, end) : unknown(id);
  }

 private:
  static rocksdb::Status unknown(std::uint32_t id) {
    return rocksdb::Status::Corruption("a change to unknown column family " + std::to_string(id));
  }

  const std::vector<rocksdb::ColumnFamilyHandle*>& by_id_;
  rocksdb::WriteBatch& out_;
};

}  // namespace

Status set_aside_wals(const std::string& ledger_path) {
  std::vector<std::string> wals, aside_wals;
  if (Status s = wal::list_wals(ledger_path, wals); !s.ok() || wals.empty()) return s;
  std::string aside = set_aside_dir(ledger_path);
  if (::mkdir(aside.c_str(), 0700) != 0 && errno != EEXIST) return os_error("cannot create", aside);
  // Numbered after those set aside by a recovery that did not finish: a repair may have made
  // WALs with their numbers again.
  if (Status s = wal::list_wals(aside, aside_wals); !s.ok()) return s;
  std::size_t next = aside_wals.size() + 1;
  for (const std::string& path : wals) {
    std::string number = std::to_string(next++);
    std::string to = aside + "/" + std::string(6 - std::min<std::size_t>(6, number.size()), '0') +
                     number + ".log";
    if (::rename(path.c_str(), to.c_str()) != 0) return os_error("cannot move", path);
  }
  // Both directories: the WALs must be found in one of them after a crash.
  Status s = sync_directory(aside);
  if (s.ok()) s = sync_directory(ledger_path);
  return s;
}

Status replay_set_aside_wals(rocksdb::DB* db,
                             const std::vector<rocksdb::ColumnFamilyHandle*>& by_id,
                             const std::string& ledger_path, WalReplay& replay) {
  replay = WalReplay{};
  std::string aside = set_aside_dir(ledger_path);
  if (!std::filesystem::exists(aside)) return {};
  std::vector<std::string> wals;
  if (Status s = wal::list_wals(aside, wals); !s.ok()) return s;
  std::string bytes;
  std::vector<std::string> batches;
  for (const std::string& path : wals) {
    if (Status s = read_file(path, bytes); !s.ok()) return s;
    batches.clear();
    read_batches(bytes, batches, replay.damaged);
    rocksdb::WriteBatch out;
    CopyByFamilyId copy(by_id, out);
    for (const std::string& rep : batches) {
      rocksdb::WriteBatch batch(rep);
      // A batch is applied whole or not at all, as RocksDB would have.
      out.SetSavePoint();
      rocksdb::Status s = batch.Iterate(&copy);
      if (s.ok()) {
        ++replay.batches;
        continue;
      }
      ++replay.damaged;
      if (rocksdb::Status back = out.RollbackToSavePoint(); !back.ok()) return Status::from(back);
    }
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (rocksdb::Status s = db->Write(wo, &out); !s.ok()) return Status::from(s);
  }
  std::error_code ec;
  std::filesystem::remove_all(aside, ec);
  if (ec) return Status(errc::io_error, "cannot remove " + aside + ": " + ec.message());
  return sync_directory(ledger_path);
}

}  // namespace tenure::storage
