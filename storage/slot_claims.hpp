#pragma once
// Which slots this node owns in a cluster, and the etcd create revision of its claim on each:
// every ledger write compares it, so a claim that expired and was made again (by anyone) has a
// new create revision and the old owner can never commit again. The membership fills the table
// (claim/release); EtcdLedger reads it on its writer thread and reports a claim it found gone.
// Thread-safe: one atomic per slot, read without a lock on every transaction.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "core/slot.hpp"

namespace tenure::storage {

class SlotClaims {
 public:
  // Called (on the ledger's writer thread) with a slot whose claim a transaction found gone,
  // after the table has forgotten it; the membership stops routing to it and drops its actors.
  using LostHandler = std::function<void(std::uint32_t slot, std::int64_t create_revision)>;

  // REQUIRES: slot < kSlots, create_revision > 0.
  void claim(std::uint32_t slot, std::int64_t create_revision) {
    revisions_[slot].store(create_revision);
  }
  // Forgets the slot (released, or found lost by the membership itself).
  void release(std::uint32_t slot) { revisions_[slot].store(0); }

  std::optional<std::int64_t> claim_revision(std::uint32_t slot) const {
    auto revision = revisions_[slot].load();
    if (revision == 0) return std::nullopt;
    return revision;
  }
  bool owns(std::uint32_t slot) const { return revisions_[slot].load() != 0; }
  std::vector<std::uint32_t> owned() const {
    std::vector<std::uint32_t> slots;
    for (std::uint32_t slot = 0; slot < kSlots; ++slot)
      if (owns(slot)) slots.push_back(slot);
    return slots;
  }

  void set_lost_handler(LostHandler handler) {
    std::lock_guard lock(mutex_);
    lost_ = std::move(handler);
  }
  // The ledger: our claim with this create revision is gone. Only that claim is forgotten (a
  // newer claim the membership made meanwhile stays), and the handler hears of it once.
  void lost(std::uint32_t slot, std::int64_t create_revision) {
    auto expected = create_revision;
    if (!revisions_[slot].compare_exchange_strong(expected, 0)) return;
    LostHandler handler;
    {
      std::lock_guard lock(mutex_);
      handler = lost_;
    }
    if (handler) handler(slot, create_revision);
  }

 private:
  std::array<std::atomic<std::int64_t>, kSlots> revisions_{};
  std::mutex mutex_;
  LostHandler lost_;
};

}  // namespace tenure::storage
