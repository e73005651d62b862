// What a request costs the transport in heap allocations, counted by this binary's operator new
// and aligned_alloc.
// A ping never reaches the engine, so everything it allocates is the transport's own.
#include <malloc.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>

#include "tests/support/temp_dir.hpp"
#include "transports/unix_server.hpp"

namespace {

std::atomic<std::uint64_t> allocations{0};

}  // namespace

// Asio's own allocations (handlers, coroutine frames) come through aligned_alloc.
extern "C" void* aligned_alloc(std::size_t alignment, std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return memalign(alignment, size);
}

void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace tenure {
namespace {

namespace asio = boost::asio;

TEST_CASE("a ping with a long id is read, answered and written without an allocation",
          "[transport]") {
  test::TempDir dir;
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread thread([&] { io.run(); });
  SystemClock clock;
  EngineConfig config;
  config.data_dir = dir.str("ledger");
  config.sync = false;
  std::string error;
  auto engine = Engine::open(io, clock, config, error);
  REQUIRE(engine);
  REQUIRE(engine->start(error));
  ServerContext context{*engine, {}, clock.now(), {}, {}};
  UnixServer server(io, context, 16);
  REQUIRE(server.listen(dir.str("socket"), error));
  server.start();

  {
    asio::io_context client_io;
    asio::local::stream_protocol::socket client(client_io);
    client.connect(asio::local::stream_protocol::endpoint(dir.str("socket")));
    // An id beyond any small-string buffer: a copy of it would allocate.
    const std::string line =
        R"({"id":"a request id longer than any small string buffer","op":"ping"})"
        "\n";
    std::string in;
    in.reserve(4096);
    auto round = [&] {
      asio::write(client, asio::buffer(line));
      std::size_t n = asio::read_until(client, asio::dynamic_buffer(in), '\n');
      in.erase(0, n);
    };
    for (int i = 0; i < 200; ++i) round();  // the connection's buffers and slots grow once
    std::uint64_t before = allocations.load();
    constexpr int kPings = 1000;
    for (int i = 0; i < kPings; ++i) round();
    std::uint64_t used = allocations.load() - before;
    INFO(used << " allocations for " << kPings << " pings");
    // Room for the engine's and RocksDB's own background work meanwhile, not for one per ping.
    CHECK(used < kPings / 10);
  }
  REQUIRE(context.registry.wait_empty(std::chrono::seconds(10)));
  server.stop();
  engine->stop();
  work.reset();
  io.stop();
  thread.join();
}

}  // namespace
}  // namespace tenure
