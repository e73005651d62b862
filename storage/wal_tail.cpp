#include "storage/wal_tail.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/unique_fd.hpp"

namespace tenure::storage {
namespace {

// RocksDB's log format (db/log_format.h): 32 KiB blocks; a record is a 7-byte header (masked
// CRC32C of type and payload, little-endian; payload length, 2 bytes; type) and its payload, and
// never crosses a block. A block's last bytes, too few for a header, are zeros.
constexpr std::size_t kBlock = 32768;
constexpr std::size_t kHeader = 7;
constexpr unsigned kFullType = 1, kLastType = 4;  // full, first, middle, last

std::array<std::uint32_t, 256> crc32c_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    table[i] = crc;
  }
  return table;
}

std::uint32_t crc32c(const unsigned char* data, std::size_t n, std::uint32_t crc = 0) {
  static const std::array<std::uint32_t, 256> table = crc32c_table();
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

// RocksDB stores CRCs masked (util/crc32c.h), so that a CRC of data holding CRCs stays strong.
std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

Status io_error(const std::string& what, const std::string& path) {
  return Status(errc::io_error, what + " " + path + ": " + std::strerror(errno));
}

// Walks a WAL's records block by block, up to the first that is not whole and intact.
struct Walk {
  bool intact = true;
  std::uint64_t records = 0;
  std::uint64_t torn_end = 0;  // where the first bad record would end (its header's length)

  void block(const unsigned char* data, std::size_t n, std::uint64_t at) {
    std::size_t pos = 0;
    while (intact && pos < n) {
      if (kBlock - pos < kHeader) {  // the block's zero trailer
        records = at + n;
        return;
      }
      const unsigned char* h = data + pos;
      std::size_t have = std::min(kHeader, n - pos);
      std::size_t length = have >= 6 ? (h[4] | (h[5] << 8)) : 0;
      unsigned type = have == kHeader ? h[6] : 0;
      bool whole =
          have == kHeader && pos + kHeader + length <= n && type >= kFullType && type <= kLastType;
      std::uint32_t stored =
          whole ? h[0] | (h[1] << 8) | (h[2] << 16) | (std::uint32_t{h[3]} << 24) : 0;
      if (!whole || masked(crc32c(h + kHeader, length, crc32c(h + 6, 1))) != stored) {
        intact = false;
        torn_end = at + pos + kHeader + length;
        return;
      }
      pos += kHeader + length;
      records = at + pos;
    }
  }
};

// Whether the file at `fd` ends in a zero byte.
Status ends_in_zero(int fd, const std::string& path, bool& zero) {
  zero = false;
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) return io_error("cannot seek in", path);
  if (end == 0) return {};
  unsigned char last = 1;
  ssize_t n;
  do {
    n = ::pread(fd, &last, 1, end - 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return io_error("cannot read", path);
  zero = last == 0;
  return {};
}

Status scan(int fd, const std::string& path, WalTail& tail) {
  tail = WalTail{};
  std::vector<unsigned char> buffer(kBlock);
  Walk walk;
  for (;;) {
    ssize_t n = ::pread(fd, buffer.data(), kBlock, static_cast<off_t>(tail.size));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot read", path);
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
    if (got < kBlock) break;
  }
  tail.records = walk.records;
  // Preallocated space after the records, perhaps after a record cut short: a crash's tail.
  // (Without the zeros, a file is left as it is, whatever its end: RocksDB judges it.)
  bool crash_tail = tail.written < tail.size && (tail.written <= tail.records ||
                                                 (!walk.intact && tail.written <= walk.torn_end));
  tail.cut_at = crash_tail ? tail.records : tail.size;
  return {};
}

}  // namespace

Status scan_wal_tail(const std::string& path, WalTail& tail) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error("cannot open", path);
  return scan(fd.get(), path, tail);
}

Status cut_wal_tails(const std::string& dir, std::uint64_t& bytes_cut) {
  bytes_cut = 0;
  std::error_code ec;
  std::vector<std::string> wals;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".log") wals.push_back(entry.path().string());
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status(errc::io_error, "cannot list " + dir + ": " + ec.message());
  }
  for (const std::string& wal : wals) {
    UniqueFd fd(::open(wal.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return io_error("cannot open", wal);
    // Most WALs a start finds were closed, and end in their last record: not read further.
    bool zero_at_end = false;
    if (Status s = ends_in_zero(fd.get(), wal, zero_at_end); !s.ok()) return s;
    if (!zero_at_end) continue;
    WalTail tail;
    if (Status s = scan(fd.get(), wal, tail); !s.ok()) return s;
    if (tail.cut_at >= tail.size) continue;
    // Opened for writing only to cut: a WAL a start only reads may be read-only.
    UniqueFd writable(::open(wal.c_str(), O_WRONLY | O_CLOEXEC));
    if (writable.get() < 0) return io_error("cannot open", wal);
    if (::ftruncate(writable.get(), static_cast<off_t>(tail.cut_at)) != 0) {
      return io_error("cannot truncate", wal);
    }
    if (::fsync(writable.get()) != 0) return io_error("cannot sync", wal);
    bytes_cut += tail.size - tail.cut_at;
    spdlog::info("cut the {} bytes a crash left after the last whole record of {}{}",
                 tail.size - tail.cut_at, wal,
                 tail.written > tail.records ? " (with a record it cut short)" : "");
  }
  return {};
}

}  // namespace tenure::storage
