// libtenure-alloc-count.so, preloaded by ctest into this test (linked with tenured's allocator,
// which may export operator new itself): every allocating call counts once, in any thread.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <thread>

namespace {

// The sum of the count file's 64-bit words; -1 if it cannot be read. Allocates nothing.
std::int64_t total() {
  static std::uint64_t words[8192];
  const char* path = std::getenv("TENURE_ALLOC_COUNT_FILE");
  int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) return -1;
  ssize_t n = pread(fd, words, sizeof words, 0);
  close(fd);
  if (n <= 0) return -1;
  std::int64_t sum = 0;
  for (ssize_t i = 0; i < n / 8; ++i) sum += static_cast<std::int64_t>(words[i]);
  return sum;
}

// Keeps the compiler from eliding an allocation and its free.
void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

// Calls each allocating entry point once (realloc twice); returns how many calls that is.
int allocate_each() {
  void* p = std::malloc(24);
  escape(p);
  p = std::realloc(p, 4096);
  escape(p);
  p = std::realloc(p, 1 << 20);
  escape(p);
  std::free(p);
  p = std::calloc(3, 40);
  escape(p);
  std::free(p);
  p = std::aligned_alloc(64, 128);
  escape(p);
  std::free(p);
  REQUIRE(posix_memalign(&p, 64, 100) == 0);
  escape(p);
  std::free(p);
  p = ::operator new(40);
  escape(p);
  ::operator delete(p);
  p = ::operator new[](400);
  escape(p);
  ::operator delete[](p);
  p = ::operator new(100, std::align_val_t(256));
  escape(p);
  ::operator delete(p, std::align_val_t(256));
  p = ::operator new(50, std::nothrow);
  escape(p);
  ::operator delete(p);
  return 10;
}

}  // namespace

TEST_CASE("every allocating call counts once, in every thread", "[alloc_count]") {
  REQUIRE(total() >= 0);  // preloaded, and the file mapped
  std::int64_t before = total();
  int calls = allocate_each();
  std::int64_t after = total();
  CHECK(after - before == calls);

  // A second thread gets a slot of its own; the main thread allocates nothing while it runs.
  std::int64_t thread_before = 0, thread_after = 0;
  int thread_calls = 0;
  std::thread t([&] {
    thread_before = total();
    thread_calls = allocate_each() + allocate_each();
    thread_after = total();
  });
  t.join();
  CHECK(thread_after - thread_before == thread_calls);
}
