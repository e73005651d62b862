#pragma once
// Memory for the Asio operations of one owner (a connection's reads, writes, timers' waits and
// the post of its answered replies; a shard's posted turns), reused from one operation to the
// next. Asio's own cache is per thread: it misses when an operation ends on another thread than
// the one that started it, or when other threads' posts left blocks of other sizes in it (1.4-2.0
// allocations per operation at 1 connection). No Asio here: Asio finds it through an allocator
// bound to a handler (asio::bind_allocator), so any layer may own one.
//
// The slots are claimed atomically: several threads may start operations at once (a shard's
// thread posts a connection's answered replies while its strand starts a read; every io thread
// posts bursts to a shard), and an operation is freed on whichever thread completes it. A request
// that finds no free slot big enough gets the heap, as without this.
// REQUIRES: outlives every operation given its allocator.
#include <atomic>
#include <cstddef>
#include <memory>

namespace tenure {

class HandlerMemory {
 public:
  // `slots`: the operations in flight at once that it serves; more go to the heap.
  explicit HandlerMemory(std::size_t slots = kConnectionSlots);
  HandlerMemory(const HandlerMemory&) = delete;
  HandlerMemory& operator=(const HandlerMemory&) = delete;

  void* allocate(std::size_t size, std::size_t alignment);
  void deallocate(void* p, std::size_t size, std::size_t alignment) noexcept;

 private:
  // A connection's: a read, a write or the writer's wait, the write timeout, the replies' post
  // and Asio's posts that hand these to the strand. Each fits a slot: `transport.allocations`
  // counts one that does not.
  static constexpr std::size_t kConnectionSlots = 6;
  static constexpr std::size_t kSlotSize = 256;
  struct alignas(std::max_align_t) Slot {
    std::byte bytes[kSlotSize];
  };
  const std::size_t count_;
  const std::unique_ptr<Slot[]> slots_;
  const std::unique_ptr<std::atomic<bool>[]> used_;
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
