#include "storage/known_rows.hpp"

namespace tenure::storage {

bool KnownRows::follow(Slot& slot, std::int64_t claim) {
  if (claim < slot.claim) return false;
  if (claim > slot.claim) {
    slot.claim = claim;
    slot.complete = false;
    std::unordered_set<std::uint64_t>().swap(slot.hashes);  // gives the memory back
  }
  return true;
}

void KnownRows::scan_started(std::uint32_t slot, std::int64_t claim) {
  Slot& s = slots_.at(slot);
  std::lock_guard lock(s.mutex);
  follow(s, claim);
}

void KnownRows::scan_done(std::uint32_t slot, std::int64_t claim,
                          const std::vector<std::uint64_t>& hashes) {
  Slot& s = slots_.at(slot);
  std::lock_guard lock(s.mutex);
  if (!follow(s, claim)) return;
  s.hashes.insert(hashes.begin(), hashes.end());
  s.complete = true;
}

void KnownRows::may_write(std::uint32_t slot, std::int64_t claim, std::uint64_t hash) {
  Slot& s = slots_.at(slot);
  std::lock_guard lock(s.mutex);
  if (follow(s, claim)) s.hashes.insert(hash);
}

bool KnownRows::surely_absent(std::uint32_t slot, std::int64_t claim, std::uint64_t hash) const {
  const Slot& s = slots_.at(slot);
  std::lock_guard lock(s.mutex);
  return s.complete && s.claim == claim && !s.hashes.contains(hash);
}

}  // namespace tenure::storage
