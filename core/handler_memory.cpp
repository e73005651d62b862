#include "core/handler_memory.hpp"

#include <cstdint>
#include <new>

namespace tenure {

HandlerMemory::HandlerMemory(std::size_t slots)
    : count_(slots),
      slots_(std::make_unique<Slot[]>(slots)),
      used_(std::make_unique<std::atomic<bool>[]>(slots)) {}

void* HandlerMemory::allocate(std::size_t size, std::size_t alignment) {
  if (size <= kSlotSize && alignment <= alignof(Slot)) {
    for (std::size_t i = 0; i < count_; ++i) {
      if (!used_[i].load(std::memory_order_relaxed) &&
          !used_[i].exchange(true, std::memory_order_acquire)) {
        return slots_[i].bytes;
      }
    }
  }
  if (alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) return ::operator new(size);
  return ::operator new(size, std::align_val_t(alignment));
}

void HandlerMemory::deallocate(void* p, std::size_t size, std::size_t alignment) noexcept {
  auto at = reinterpret_cast<std::uintptr_t>(p);
  auto first = reinterpret_cast<std::uintptr_t>(slots_.get());
  if (at >= first && at < first + count_ * sizeof(Slot)) {
    // Release: all the operation did in the slot happens before the next claim (acquire).
    used_[(at - first) / sizeof(Slot)].store(false, std::memory_order_release);
    return;
  }
  // Unsized: clang enables sized deallocation only with -fsized-deallocation.
  static_cast<void>(size);
  if (alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) return ::operator delete(p);
  ::operator delete(p, std::align_val_t(alignment));
}

}  // namespace tenure
