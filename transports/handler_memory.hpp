#pragma once
// Memory for one connection's Asio operations (its socket reads and writes, its timers' waits,
// the post of its answered replies), reused from one operation to the next. Asio's own cache is
// per thread: it misses when an operation ends on another io thread than the one that started
// it, or when other threads' posts left blocks of other sizes in it (1.4-2.0 allocations per
// operation at 1 connection).
//
// The slots are claimed atomically: a shard's thread posts the answered replies while the
// connection's strand may start a read, and an operation is freed on whichever thread completes
// it. A request that finds no free slot big enough gets the heap, as without this.
// REQUIRES: outlives every operation given its allocator (a connection's handlers hold it).
#include <array>
#include <atomic>
#include <cstddef>

namespace tenure {

class HandlerMemory {
 public:
  HandlerMemory() = default;
  HandlerMemory(const HandlerMemory&) = delete;
  HandlerMemory& operator=(const HandlerMemory&) = delete;

  void* allocate(std::size_t size, std::size_t alignment);
  void deallocate(void* p, std::size_t size, std::size_t alignment) noexcept;

 private:
  // A read, a write or the writer's wait, the write timeout, the replies' post and Asio's posts
  // that hand these to the strand. Each fits a slot: `transport.allocations` counts one that
  // does not.
  static constexpr std::size_t kSlots = 6;
  static constexpr std::size_t kSlotSize = 256;
  struct alignas(std::max_align_t) Slot {
    std::byte bytes[kSlotSize];
  };
  std::array<Slot, kSlots> slots_;
  std::array<std::atomic<bool>, kSlots> used_{};
};

// The standard allocator interface over a HandlerMemory, for Asio's associated_allocator
// (asio::bind_allocator).
template <typename T>
class HandlerAllocator {
 public:
  using value_type = T;

  explicit HandlerAllocator(HandlerMemory& memory) noexcept : memory_(&memory) {}
  template <typename U>
  HandlerAllocator(const HandlerAllocator<U>& other) noexcept : memory_(other.memory_) {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(memory_->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    memory_->deallocate(p, n * sizeof(T), alignof(T));
  }

  template <typename U>
  bool operator==(const HandlerAllocator<U>& other) const noexcept {
    return memory_ == other.memory_;
  }

 private:
  template <typename>
  friend class HandlerAllocator;
  HandlerMemory* memory_;
};

}  // namespace tenure
