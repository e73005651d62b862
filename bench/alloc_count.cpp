// libtenure-alloc-count.so: counts a process's heap allocations, for bench/compare's allocations
// per operation. Preloaded into a program (LD_PRELOAD), it interposes every allocating entry point
// of the C and C++ allocators (malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign,
// valloc, pvalloc and every operator new), counts the call in the calling thread's slot and
// forwards it to the allocator the program would have used: glibc's, or the jemalloc that
// tenured links (which exports operator new itself, so counting malloc alone would miss most).
// Frees are not counted and not interposed.
//
// The slots are 64-bit counters 64 bytes apart in a shared file mapping named by
// TENURE_ALLOC_COUNT_FILE: the total is the sum of the file's 64-bit words, readable at any time
// by another process (bench/allocs) with no signal, thread or syscall in the counted one. Without
// the variable the counts stay in memory. One thread writes each slot (threads past the last
// slot share it atomically), so counting is a plain increment.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

struct alignas(64) Slot {
  std::uint64_t count;
};
constexpr std::size_t kSlots = 1024;
constexpr std::size_t kNoSlot = ~std::size_t{0};

Slot g_early[kSlots];  // until the file is mapped (the loader allocates before constructors run)
std::atomic<Slot*> g_slots{g_early};
std::atomic<std::size_t> g_next_slot{0};
// initial-exec: a dynamic TLS access could itself allocate.
thread_local std::size_t t_slot __attribute__((tls_model("initial-exec"))) = kNoSlot;

void count() {
  std::size_t i = t_slot;
  if (i == kNoSlot) {
    i = std::min(g_next_slot.fetch_add(1, std::memory_order_relaxed), kSlots - 1);
    t_slot = i;
  }
  std::uint64_t* n = &g_slots.load(std::memory_order_relaxed)[i].count;
  if (i == kSlots - 1) {
    __atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
  } else {
    __atomic_store_n(n, __atomic_load_n(n, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  }
}

// The next definitions of the interposed functions, found once.
using MallocFn = void* (*)(std::size_t);
using CallocFn = void* (*)(std::size_t, std::size_t);
using ReallocFn = void* (*)(void*, std::size_t);
using AlignedFn = void* (*)(std::size_t, std::size_t);
using PosixMemalignFn = int (*)(void**, std::size_t, std::size_t);
using FreeFn = void (*)(void*);

struct Next {
  MallocFn malloc;
  CallocFn calloc;
  ReallocFn realloc;
  AlignedFn aligned_alloc;
  PosixMemalignFn posix_memalign;
  AlignedFn memalign;
  MallocFn valloc;
  MallocFn pvalloc;
  FreeFn free;
};
Next g_next;
std::atomic<bool> g_resolved{false};
thread_local bool t_resolving __attribute__((tls_model("initial-exec"))) = false;

// dlsym may allocate (its error state): those few requests are served from here, never freed.
alignas(std::max_align_t) char g_arena[4096];
std::size_t g_arena_used = 0;

bool in_arena(const void* p) {
  auto* c = static_cast<const char*>(p);
  return c >= g_arena && c < g_arena + sizeof g_arena;
}

void* arena_alloc(std::size_t size) {
  std::size_t at =
      (g_arena_used + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);
  if (at + size > sizeof g_arena) return nullptr;
  g_arena_used = at + size;
  return g_arena + at;
}

template <typename F>
F find(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void resolve() {
  if (g_resolved.load(std::memory_order_acquire)) return;
  t_resolving = true;
  Next next{find<MallocFn>("malloc"),
            find<CallocFn>("calloc"),
            find<ReallocFn>("realloc"),
            find<AlignedFn>("aligned_alloc"),
            find<PosixMemalignFn>("posix_memalign"),
            find<AlignedFn>("memalign"),
            find<MallocFn>("valloc"),
            find<MallocFn>("pvalloc"),
            find<FreeFn>("free")};
  t_resolving = false;
  if (!next.malloc || !next.calloc || !next.realloc || !next.posix_memalign || !next.free) {
    static const char message[] = "tenure-alloc-count: the allocator's functions are not found\n";
    (void)!write(2, message, sizeof message - 1);
    std::abort();
  }
  g_next = next;  // threads racing here store the same values
  g_resolved.store(true, std::memory_order_release);
}

// Moves the counts into the file named by TENURE_ALLOC_COUNT_FILE. Runs before main, while the
// program has one thread.
__attribute__((constructor)) void map_counts() {
  resolve();
  const char* path = getenv("TENURE_ALLOC_COUNT_FILE");
  if (!path || !*path) return;
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  void* map = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, sizeof g_early) == 0) {
    map = mmap(nullptr, sizeof g_early, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (fd >= 0) close(fd);
  if (map == MAP_FAILED) {
    static const char message[] = "tenure-alloc-count: cannot map TENURE_ALLOC_COUNT_FILE\n";
    (void)!write(2, message, sizeof message - 1);
    return;
  }
  std::memcpy(map, g_early, sizeof g_early);
  g_slots.store(static_cast<Slot*>(map), std::memory_order_relaxed);
}

// operator new's contract on top of a counted allocation: the new-handler loop, then bad_alloc.
template <typename Allocate>
void* new_or_throw(Allocate allocate) {
  for (;;) {
    if (void* p = allocate()) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

template <typename Allocate>
void* new_or_null(Allocate allocate) noexcept {
  try {
    return new_or_throw(allocate);
  } catch (...) {
    return nullptr;
  }
}

void* aligned(std::size_t size, std::align_val_t align) {
  void* p = nullptr;
  std::size_t a = std::max(static_cast<std::size_t>(align), sizeof(void*));
  return posix_memalign(&p, a, size == 0 ? 1 : size) == 0 ? p : nullptr;
}

}  // namespace

extern "C" {

void* malloc(std::size_t size) {
  if (t_resolving) return arena_alloc(size);
  resolve();
  count();
  return g_next.malloc(size);
}

void* calloc(std::size_t n, std::size_t size) {
  if (t_resolving) return n == 0 || size <= sizeof g_arena / n ? arena_alloc(n * size) : nullptr;
  resolve();
  count();
  return g_next.calloc(n, size);
}

void* realloc(void* p, std::size_t size) {
  resolve();
  count();
  return g_next.realloc(p, size);
}

void free(void* p) {
  if (in_arena(p)) return;
  resolve();
  g_next.free(p);
}

void* aligned_alloc(std::size_t align, std::size_t size) {
  resolve();
  count();
  return g_next.aligned_alloc(align, size);
}

int posix_memalign(void** out, std::size_t align, std::size_t size) {
  resolve();
  count();
  return g_next.posix_memalign(out, align, size);
}

void* memalign(std::size_t align, std::size_t size) {
  resolve();
  count();
  return g_next.memalign(align, size);
}

void* valloc(std::size_t size) {
  resolve();
  count();
  return g_next.valloc(size);
}

void* pvalloc(std::size_t size) {
  resolve();
  count();
  return g_next.pvalloc(size);
}

}  // extern "C"

// Each counted once, through the counted C functions above; the next library's operator delete
// frees them (both glibc's and jemalloc's accept what their malloc and posix_memalign returned).
void* operator new(std::size_t size) {
  return new_or_throw([=] { return malloc(size == 0 ? 1 : size); });
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return new_or_null([=] { return malloc(size == 0 ? 1 : size); });
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t align) {
  return new_or_throw([=] { return aligned(size, align); });
}
void* operator new[](std::size_t size, std::align_val_t align) { return operator new(size, align); }
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return new_or_null([=] { return aligned(size, align); });
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t& tag) noexcept {
  return operator new(size, align, tag);
}
