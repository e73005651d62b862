#include "storage/wal_tail.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <vector>

#include "core/unique_fd.hpp"
#include "storage/file_sync.hpp"
#include "storage/wal_format.hpp"

namespace tenure::storage {
namespace {

// Walks a WAL's records block by block, up to the first that is not whole and intact.
struct Walk {
  bool intact = true;
  std::uint64_t records = 0;
  std::uint64_t torn_start = 0;  // where the first bad record begins
  std::uint64_t torn_end = 0;    // where it would end (its header's length)
  // Whether its length keeps it inside its block, as every record's does.
  bool torn_fits = false;
  // Where the first intact record after its start begins, if one does in its block.
  std::optional<std::uint64_t> intact_after;

  void block(const unsigned char* data, std::size_t n, std::uint64_t at) {
    std::size_t pos = 0;
    while (intact && pos < n) {
      wal::Fragment f = wal::read_fragment(data, n, pos);
      if (f.kind == wal::Fragment::Kind::trailer) {
        records = at + n;
        return;
      }
      if (f.kind == wal::Fragment::Kind::bad) {
        intact = false;
        torn_start = at + pos;
        torn_end = at + pos + wal::kHeader + f.length;
        torn_fits = pos + wal::kHeader + f.length <= wal::kBlock;
        for (std::size_t next = pos + 1; next + wal::kHeader <= n; ++next) {
          if (wal::read_fragment(data, n, next).kind == wal::Fragment::Kind::whole) {
            intact_after = at + next;
            break;
          }
        }
        return;
      }
      pos += wal::kHeader + f.length;
      records = at + pos;
    }
  }
};

// Whether the file at `fd` ends in a zero byte.
Status ends_in_zero(int fd, const std::string& path, bool& zero) {
  zero = false;
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) return os_error("cannot seek in", path);
  if (end == 0) return {};
  unsigned char last = 1;
  ssize_t n;
  do {
    n = ::pread(fd, &last, 1, end - 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return os_error("cannot read", path);
  zero = last == 0;
  return {};
}

Status scan(int fd, const std::string& path, WalTail& tail) {
  tail = WalTail{};
  std::vector<unsigned char> buffer(wal::kBlock);
  Walk walk;
  for (;;) {
    ssize_t n = ::pread(fd, buffer.data(), wal::kBlock, static_cast<off_t>(tail.size));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("cannot read", path);
    if (n == 0) break;
    auto got = static_cast<std::size_t>(n);
    for (std::size_t i = got; i > 0; --i) {
      if (buffer[i - 1] != 0) {
        tail.written = tail.size + i;
        break;
      }
    }
    if (walk.intact) walk.block(buffer.data(), got, tail.size);
    tail.size += got;
    if (got < wal::kBlock) break;
  }
  tail.records = walk.records;
  // Preallocated space after the records, perhaps after a record cut short: a crash's tail.
  // (Without the zeros, a file is left as it is, whatever its end: RocksDB judges it.) A record
  // is cut short when its end reads as zeros: what a crash did not write of a preallocated file
  // reads so, from a sector's start at least. It is damage instead when its bytes changed (a
  // whole record), when its length runs out of its block (no record does), or when an intact
  // record follows it (a crash cuts the last write, and nothing after it).
  constexpr std::uint64_t kSector = 512;
  std::uint64_t unwritten_from =
      walk.torn_end > 0 ? std::max(walk.torn_start, (walk.torn_end - 1) / kSector * kSector) : 0;
  bool torn_by_crash = !walk.intact && walk.torn_fits && tail.written <= unwritten_from &&
                       !(walk.intact_after && *walk.intact_after < tail.written);
  bool crash_tail = tail.written < tail.size && (tail.written <= tail.records || torn_by_crash);
  tail.cut_at = crash_tail ? tail.records : tail.size;
  // A crash keeps a preallocated WAL's size: its end is where fallocate last put it (a multiple
  // of the page), or, after a clean close, right after a whole record. A record that runs past
  // any other end was cut off by hand or by a broken copy: the synced writes in it are lost.
  constexpr std::uint64_t kPage = 4096;
  tail.cut_off = !walk.intact && tail.written == tail.size && walk.torn_end > tail.size &&
                 tail.size % kPage != 0;
  return {};
}

}  // namespace

Status scan_wal_tail(const std::string& path, WalTail& tail) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return os_error("cannot open", path);
  return scan(fd.get(), path, tail);
}

Status cut_wal_tails(const std::string& dir, std::uint64_t& bytes_cut, std::string* cut_off) {
  bytes_cut = 0;
  std::vector<std::string> wals;
  if (Status s = wal::list_wals(dir, wals); !s.ok()) return s;
  for (const std::string& wal : wals) {
    UniqueFd fd(::open(wal.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return os_error("cannot open", wal);
    // Most WALs a start finds were closed, and end in their last record: read only to tell
    // whether they were cut off since.
    bool zero_at_end = false;
    if (Status s = ends_in_zero(fd.get(), wal, zero_at_end); !s.ok()) return s;
    if (!zero_at_end && cut_off == nullptr) continue;
    WalTail tail;
    if (Status s = scan(fd.get(), wal, tail); !s.ok()) return s;
    if (tail.cut_off && cut_off != nullptr && cut_off->empty()) *cut_off = wal;
    if (tail.cut_at >= tail.size) continue;
    // Opened for writing only to cut: a WAL a start only reads may be read-only.
    UniqueFd writable(::open(wal.c_str(), O_WRONLY | O_CLOEXEC));
    if (writable.get() < 0) return os_error("cannot open", wal);
    if (::ftruncate(writable.get(), static_cast<off_t>(tail.cut_at)) != 0) {
      return os_error("cannot truncate", wal);
    }
    if (::fsync(writable.get()) != 0) return os_error("cannot sync", wal);
    bytes_cut += tail.size - tail.cut_at;
    spdlog::info("cut the {} bytes a crash left after the last whole record of {}{}",
                 tail.size - tail.cut_at, wal,
                 tail.written > tail.records ? " (with a record it cut short)" : "");
  }
  return {};
}

}  // namespace tenure::storage
