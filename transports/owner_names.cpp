#include "transports/owner_names.hpp"

#include <functional>

namespace tenure {

SharedString OwnerNames::name(std::string_view text) {
  if (!slots_) slots_ = std::make_unique<std::array<Slot, kSlots>>();
  std::size_t hash = std::hash<std::string_view>{}(text);
  Slot* oldest = nullptr;
  for (std::size_t i = 0; i < kProbes; ++i) {
    Slot& slot = (*slots_)[(hash + i) % kSlots];
    if (slot.hash == hash && slot.name == text) return slot.name;
    if (oldest == nullptr || slot.stored < oldest->stored) oldest = &slot;
  }
  oldest->name = SharedString(text);
  oldest->hash = hash;
  oldest->stored = ++stored_;
  return oldest->name;
}

}  // namespace tenure
