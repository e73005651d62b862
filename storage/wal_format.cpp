#include "storage/wal_format.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>

namespace tenure::storage::wal {
namespace {

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

}  // namespace

Status list_wals(const std::string& dir, std::vector<std::string>& paths) {
  paths.clear();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".log") paths.push_back(entry.path().string());
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status(errc::io_error, "cannot list " + dir + ": " + ec.message());
  }
  // Numbered in the order RocksDB made them; a longer number is a later one.
  std::sort(paths.begin(), paths.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return {};
}

Fragment read_fragment(const unsigned char* block, std::size_t n, std::size_t pos) {
  Fragment f;
  if (kBlock - pos < kHeader) {
    f.kind = Fragment::Kind::trailer;
    return f;
  }
  const unsigned char* h = block + pos;
  std::size_t have = std::min(kHeader, n - pos);
  f.length = have >= 6 ? (h[4] | (h[5] << 8)) : 0;
  f.zeros = have == kHeader && std::all_of(h, h + kHeader, [](unsigned char c) { return c == 0; });
  unsigned type = have == kHeader ? h[6] : 0;
  bool whole = have == kHeader && pos + kHeader + f.length <= n &&
               type >= static_cast<unsigned>(FragmentType::full) &&
               type <= static_cast<unsigned>(FragmentType::last);
  std::uint32_t stored =
      whole ? h[0] | (h[1] << 8) | (h[2] << 16) | (std::uint32_t{h[3]} << 24) : 0;
  f.framed = whole;
  if (!whole || masked(crc32c(h + kHeader, f.length, crc32c(h + 6, 1))) != stored) return f;
  f.kind = Fragment::Kind::whole;
  f.type = static_cast<FragmentType>(type);
  f.payload = h + kHeader;
  return f;
}

}  // namespace tenure::storage::wal
