#pragma once
// RocksDB's WAL format (db/log_format.h), read without RocksDB: the start-up cuts a crash's tail
// by it (wal_tail.hpp), and a repair's set-aside WALs are replayed by it (wal_replay.hpp).
// A WAL is 32 KiB blocks of records. A record is a 7-byte header (masked CRC32C of its type and
// payload, little-endian; the payload's length, 2 bytes; its type) and its payload, and never
// crosses a block: a write batch longer than a block's room is split into first, middle and last
// fragments. A block's last bytes, too few for a header, are zeros.
#include <cstddef>
#include <string>
#include <vector>

#include "storage/errc.hpp"

namespace tenure::storage::wal {

constexpr std::size_t kBlock = 32768;
constexpr std::size_t kHeader = 7;

enum class FragmentType : unsigned char { full = 1, first = 2, middle = 3, last = 4 };

struct Fragment {
  enum class Kind {
    whole,    // an intact fragment: type, payload and length are set
    trailer,  // the block's zero trailer: nothing more in this block
    bad,      // cut short, an unknown type or a checksum that does not match
  };
  Kind kind = Kind::bad;
  FragmentType type = FragmentType::full;
  const unsigned char* payload = nullptr;
  // The payload's length its header gives (0 if even the header is cut short): for a bad
  // fragment, where it would have ended.
  std::size_t length = 0;
  // A header of zeros only: what preallocated space holds after the last record.
  bool zeros = false;
  // A bad fragment whose header is whole and fits the block, and only its checksum is wrong:
  // the next fragment likely starts where its length says.
  bool framed = false;
};

// The WALs (`NNNNNN.log`) in `dir`, oldest first; none if `dir` does not exist.
Status list_wals(const std::string& dir, std::vector<std::string>& paths);

// Reads the fragment at `pos` of a block whose first `n` bytes are `block`.
Fragment read_fragment(const unsigned char* block, std::size_t n, std::size_t pos);

}  // namespace tenure::storage::wal
