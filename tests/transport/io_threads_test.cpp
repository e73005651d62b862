// The daemon's io threads: the ones not wanted park and take no handler; wanted again, they
// serve again; a parked thread does not hold up the join.
#include "apps/tenured/io_threads.hpp"

#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace tenure {
namespace {

using namespace std::chrono_literals;

// Whether two handlers posted together run at the same time: the first waits up to `patience`
// for the second to start.
bool run_together(boost::asio::io_context& io, std::chrono::milliseconds patience) {
  struct Meeting {
    std::mutex mutex;
    std::condition_variable changed;
    bool second_started = false;
    bool first_done = false;
    bool met = false;
  };
  auto m = std::make_shared<Meeting>();
  boost::asio::post(io, [m, patience] {
    std::unique_lock lock(m->mutex);
    m->met = m->changed.wait_for(lock, patience, [&] { return m->second_started; });
    m->first_done = true;
    m->changed.notify_all();
  });
  boost::asio::post(io, [m] {
    std::lock_guard lock(m->mutex);
    m->second_started = true;
    m->changed.notify_all();
  });
  std::unique_lock lock(m->mutex);
  m->changed.wait(lock, [&] { return m->first_done && m->second_started; });
  return m->met;
}

void wait_until_serving(IoThreads& threads, unsigned n) {
  auto give_up = std::chrono::steady_clock::now() + 10s;
  while (threads.serving() != n && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(threads.serving() == n);
}

}  // namespace

TEST_CASE("io threads not wanted park until wanted again", "[transport][io_threads]") {
  boost::asio::io_context io(2);
  IoThreads threads(io, 2);
  CHECK(run_together(io, 10s));

  threads.serve_with(1);
  wait_until_serving(threads, 1);
  // One thread serves: the second handler cannot start before the first has returned.
  CHECK_FALSE(run_together(io, 200ms));

  threads.serve_with(2);
  wait_until_serving(threads, 2);
  CHECK(run_together(io, 10s));

  SECTION("never fewer than one, never more than all") {
    threads.serve_with(0);
    wait_until_serving(threads, 1);
    threads.serve_with(5);
    wait_until_serving(threads, 2);
  }
  SECTION("a parked thread is joined") {
    threads.serve_with(1);
    wait_until_serving(threads, 1);
    threads.join();
    CHECK(io.stopped());
  }
}

}  // namespace tenure
