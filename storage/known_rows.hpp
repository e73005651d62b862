#pragma once
// Which keys of a slot have a lease row in etcd, as far as this node knows: all of them once it
// has scanned the slot under its claim, because no other node can write a slot while the claim
// is ours (their transactions compare their own claims). A key the table does not list has no
// row, so loading it needs no etcd read: the first acquire of a key never leased before (the
// usual case) does not hold its shard's thread for a round trip. Keys are listed by their 64-bit
// FNV-1a hash; two keys sharing one only cost a read. Thread-safe: the shards load, the writer
// thread writes, the membership scans; one mutex per slot.
#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "core/slot.hpp"

namespace tenure::storage {

class KnownRows {
 public:
  // A scan of `slot` under `claim` begins: from now on, rows written under that claim are listed
  // here, so that a write racing the scan is in one or the other.
  void scan_started(std::uint32_t slot, std::int64_t claim);
  // The scan begun under `claim` read these keys: the slot's list is complete.
  void scan_done(std::uint32_t slot, std::int64_t claim, const std::vector<std::uint64_t>& hashes);
  // A transaction under `claim` is about to write the row of the key with this hash. Called
  // before it is sent, so that a write whose outcome never came back counts as made.
  void may_write(std::uint32_t slot, std::int64_t claim, std::uint64_t hash);
  // True only if the slot was scanned under `claim` and no row of this hash was seen or written.
  bool surely_absent(std::uint32_t slot, std::int64_t claim, std::uint64_t hash) const;

 private:
  struct Slot {
    mutable std::mutex mutex;
    std::int64_t claim = 0;  // the newest claim heard of: claims' create revisions only grow
    bool complete = false;
    std::unordered_set<std::uint64_t> hashes;
  };
  // Moves the slot to `claim` if it is newer (what an older claim listed says nothing now).
  // Returns false for an older claim. REQUIRES: slot.mutex held.
  static bool follow(Slot& slot, std::int64_t claim);

  std::array<Slot, kSlots> slots_;
};

}  // namespace tenure::storage
