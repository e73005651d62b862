// tenure-footprint: the engine's memory per live lease and per idle key, and the group-commit
// batch sizes under concurrent load, measured in-process (no transport in the way).
//   tenure-footprint [--leases N] [--in-flight N] [--sync always|none]
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "actors/engine.hpp"

using namespace tenure;

namespace {

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Bytes malloc has handed out and not had back: RSS less what the allocator keeps in reserve.
std::size_t heap_in_use() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Runs `count` operations with at most `in_flight` outstanding, like a pipelining client.
template <typename Issue>
void drive(std::size_t count, std::size_t in_flight, Issue issue) {
  std::mutex mutex;
  std::condition_variable cv;
  std::size_t outstanding = 0, done = 0;
  for (std::size_t i = 0; i < count; ++i) {
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return outstanding < in_flight; });
      ++outstanding;
    }
    issue(i, [&] {
      std::lock_guard lock(mutex);
      --outstanding;
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return done == count; });
}

void print_batches(const storage::WriterStats& w) {
  std::printf("group commit: %llu writes in %llu batches (mean %.1f, max %llu), %llu syncs\n",
              static_cast<unsigned long long>(w.ops), static_cast<unsigned long long>(w.batches),
              w.batches ? static_cast<double>(w.ops) / static_cast<double>(w.batches) : 0.0,
              static_cast<unsigned long long>(w.max_batch),
              static_cast<unsigned long long>(w.syncs));
  std::printf("batch sizes:");
  for (std::size_t b = 0; b < w.batch_size_log2.size(); ++b) {
    if (w.batch_size_log2[b])
      std::printf(" [%zu..%zu]=%llu", std::size_t{1} << b, (std::size_t{2} << b) - 1,
                  static_cast<unsigned long long>(w.batch_size_log2[b]));
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Measures the lease engine's memory per lease and its group-commit batching"};
  std::size_t leases = 1'000'000, in_flight = 512;
  std::string sync = "none";
  app.add_option("--leases", leases, "live leases to hold");
  app.add_option("--in-flight", in_flight, "requests outstanding at once");
  app.add_option("--sync", sync, "always|none")->check(CLI::IsMember({"always", "none"}));
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  char pattern[] = "/tmp/tenure-footprint-XXXXXX";
  if (!mkdtemp(pattern)) return 1;
  std::filesystem::path dir = pattern;

  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i) {
    threads.emplace_back([&] { io.run(); });
  }
  SystemClock clock;
  EngineConfig config;
  config.data_dir = (dir / "ledger").string();
  config.sync = sync == "always";
  std::string error;
  auto engine = Engine::open(io, clock, config, error);
  if (!engine || !engine->start(error)) {
    std::cerr << "cannot open the engine: " << error << "\n";
    return 1;
  }
  auto key_of = [](std::size_t i) { return "bench/footprint/" + std::to_string(i); };
  const std::string owner = "7f1c2d3e-4b5a-4c6d-8e7f-a0b1c2d3e4f5";

  std::size_t rss_empty = resident_bytes();
  std::size_t heap_empty = heap_in_use();
  auto started = std::chrono::steady_clock::now();
  drive(leases, in_flight, [&](std::size_t i, auto done) {
    AcquireRequest r;
    r.key = key_of(i);
    r.params.owner = owner;
    r.params.ttl_ms = 3'600'000;
    engine->acquire(std::move(r), [done](AcquireResult) { done(); });
  });
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::size_t rss_held = resident_bytes();
  std::size_t heap_held = heap_in_use();
  auto stats = engine->stats();
  std::printf("%zu acquires in %.2fs (%.0f/s, sync=%s, %zu in flight)\n", leases, seconds,
              static_cast<double>(leases) / seconds, sync.c_str(), in_flight);
  std::printf("live leases %llu, resident keys %llu\n",
              static_cast<unsigned long long>(stats.live_leases),
              static_cast<unsigned long long>(stats.resident_keys));
  std::printf("RSS: %.1f MiB empty, %.1f MiB with leases: %.0f bytes per live lease\n",
              static_cast<double>(rss_empty) / 1048576, static_cast<double>(rss_held) / 1048576,
              static_cast<double>(rss_held - rss_empty) / static_cast<double>(leases));
  std::printf("heap in use: %.0f bytes per live lease\n",
              static_cast<double>(heap_held - heap_empty) / static_cast<double>(leases));
  print_batches(stats.writer);

  drive(leases, in_flight, [&](std::size_t i, auto done) {
    ReleaseRequest r;
    r.key = key_of(i);
    r.holder.owner = owner;
    engine->release(std::move(r), [done](HolderResult) { done(); });
  });
  for (int i = 0; i < 200 && engine->stats().resident_keys > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::size_t rss_idle = resident_bytes();
  std::printf(
      "after release: resident keys %llu, RSS %.1f MiB (%.0f bytes per idle key above "
      "empty; freed memory is not always returned to the OS)\n",
      static_cast<unsigned long long>(engine->stats().resident_keys),
      static_cast<double>(rss_idle) / 1048576,
      static_cast<double>(rss_idle > rss_empty ? rss_idle - rss_empty : 0) /
          static_cast<double>(leases));
  // What the engine still holds once the allocator hands its free pages back.
  std::size_t heap_idle = heap_in_use();
  malloc_trim(0);
  std::size_t rss_trimmed = resident_bytes();
  std::printf(
      "after release: heap in use %.0f bytes per idle key; RSS %.1f MiB after malloc_trim\n",
      static_cast<double>(heap_idle > heap_empty ? heap_idle - heap_empty : 0) /
          static_cast<double>(leases),
      static_cast<double>(rss_trimmed) / 1048576);

  engine->stop();
  work.reset();
  io.stop();
  for (auto& t : threads) t.join();
  engine.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
