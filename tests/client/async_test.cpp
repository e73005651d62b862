// The Asio face of tenure::Client: completion tokens on the caller's own io_context.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "tests/client/client_common.hpp"

using namespace client_test;
namespace asio = boost::asio;

TEST_CASE("co_await client.async_acquire(...) on the caller's io_context", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  asio::io_context io;
  bool finished = false;
  std::thread::id completed_on;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto a = co_await c.async_acquire("k", {.ttl = 30s}, asio::use_awaitable);
        completed_on = std::this_thread::get_id();
        REQUIRE(a);
        CHECK(a->token == 1);
        // Named, not a braced temporary: GCC 12 destroys those twice inside co_await.
        tenure::client::AcquireOptions bob{.owner = "bob"};
        auto held = co_await c.async_acquire("k", bob, asio::use_awaitable);
        REQUIRE_FALSE(held);
        CHECK(held.error().is(tenure::client_errc::held));
        CHECK(co_await c.async_check("k", 1, asio::use_awaitable));
        auto released = co_await c.async_release("k", {.token = 1}, asio::use_awaitable);
        REQUIRE(released);
        CHECK(released->token == 1u);
        finished = true;
      },
      asio::detached);
  io.run();
  CHECK(finished);
  CHECK(completed_on == std::this_thread::get_id());  // on the caller's executor
}

TEST_CASE("async calls complete a plain callback", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  std::promise<bool> pong;
  c.async_ping([&](tenure::client::Result<tenure::protocol::Done> r) { pong.set_value(r.ok()); });
  auto future = pong.get_future();
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  CHECK(future.get());
}

TEST_CASE("a blocking call in a completion on the io thread fails instead of hanging", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  std::promise<bool> refused;
  c.async_ping([&](tenure::client::Result<tenure::protocol::Done>) {
    auto r = c.ping();  // no executor: this runs on the client's io thread
    refused.set_value(!r && r.error().is(tenure::client_errc::invalid_argument));
  });
  auto future = refused.get_future();
  REQUIRE(future.wait_for(10s) == std::future_status::ready);
  CHECK(future.get());
}
