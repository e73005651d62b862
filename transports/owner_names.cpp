#include "transports/owner_names.hpp"

#include <functional>

namespace tenure {

SharedString OwnerNames::name(std::string_view text) {
  if (!slots_) slots_ = std::make_unique<std::array<Slot, kSlots>>();
  std::size_t first = std::hash<std::string_view>{}(text);
  Slot* oldest = nullptr;
  for (std::size_t i = 0; i < kProbes; ++i) {
    Slot& slot = (*slots_)[(first + i) % kSlots];
    if (slot.name == text) return slot.name;
    if (oldest == nullptr || slot.stored < oldest->stored) oldest = &slot;
  }
  oldest->name = SharedString(text);
  oldest->stored = ++stored_;
  return oldest->name;
}

}  // namespace tenure
