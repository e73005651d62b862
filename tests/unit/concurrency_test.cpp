// Many threads, many keys: never two live holders of one key, tokens only go up.
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>

#include "actors/turn_gate.hpp"
#include "tests/unit/engine_fixture.hpp"

using namespace tenure;
using tenure::test::EngineFixture;

TEST_CASE("many keys on many threads never produce two live holders of one key", "[concurrency]") {
  EngineConfig config;
  config.sync = false;
  EngineFixture f(config);
  constexpr int kThreads = 8, kRounds = 300, kKeys = 5;
  std::mutex mutex;
  std::map<std::string, std::string> holder;  // key -> owner we were told holds it
  std::map<std::string, Token> last_token;
  std::atomic<int> double_holders{0}, backwards{0}, acquired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string owner = "owner-" + std::to_string(t);
      for (int i = 0; i < kRounds; ++i) {
        std::string key = "c/" + std::to_string((i * 7 + t) % kKeys);
        auto r = f.acquire(key, owner, 60'000);
        if (r.status != AcquireStatus::acquired) continue;
        acquired++;
        {
          std::lock_guard lock(mutex);
          auto& h = holder[key];
          if (!h.empty() && h != owner) double_holders++;
          h = owner;
          if (r.lease->token <= last_token[key] && r.fresh) backwards++;
          last_token[key] = std::max(last_token[key], r.lease->token);
          // Clear before the release is sent: after it, another thread may win the key.
          h.clear();
        }
        f.release(key, owner);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(double_holders == 0);
  CHECK(backwards == 0);
  CHECK(acquired > 0);
  Token total = 0;
  for (int k = 0; k < kKeys; ++k) total += f.get("c/" + std::to_string(k)).last_token;
  CHECK(total == static_cast<Token>(acquired.load()));
}

TEST_CASE("a turn gate counts a handler until it has run or been dropped", "[concurrency]") {
  TurnGate gate;
  auto ran = std::make_shared<int>(0);
  {
    boost::asio::io_context io;
    boost::asio::post(io, gate.counted([ran] { ++*ran; }));
    boost::asio::post(io, gate.counted([ran] { ++*ran; }));
    CHECK(gate.open() == 2);
    CHECK_FALSE(gate.wait_idle(std::chrono::milliseconds(20)));
    io.run_one();
    CHECK(*ran == 1);
    CHECK(gate.open() == 1);
  }  // the io context is destroyed with one handler unrun
  CHECK(gate.open() == 0);
  CHECK(gate.wait_idle(std::chrono::milliseconds(0)));
  CHECK(ran.use_count() == 1);  // the handlers' captures are gone too
}

TEST_CASE("a closed gate refuses new work and still waits for what it let in", "[concurrency]") {
  TurnGate gate;
  REQUIRE(gate.enter());
  CHECK(gate.close());
  CHECK_FALSE(gate.close());  // once only: a second stop() returns at once
  CHECK(gate.closed());
  CHECK_FALSE(gate.enter());
  CHECK(gate.open() == 1);  // the refused one is not counted
  CHECK_FALSE(gate.wait_idle(std::chrono::milliseconds(10)));
  std::thread late([&] { gate.leave(); });
  CHECK(gate.wait_idle(std::chrono::seconds(10)));
  late.join();
  CHECK(gate.open() == 0);
  {
    TurnGate::Ticket ticket(gate);
    CHECK(gate.open() == 1);
  }  // turns still count when closed
  CHECK(gate.open() == 0);
}

TEST_CASE("an engine can be destroyed as soon as stop returns, mid-burst", "[concurrency]") {
  // Turns go on after they reply (an actor retires, a commit lands) and stop() posts some of its
  // own; it must outwait them all. Under ASan a turn that outlives the engine is a use-after-free.
  for (int round = 0; round < 20; ++round) {
    EngineConfig config;
    config.sync = false;
    EngineFixture f(config);
    f.acquire_burst("burst/", 200, 1);  // a 1 ms TTL arms expiry timers as well
    f.engine().stop();
    REQUIRE(f.engine().stats().pending_turns == 0);
    f.close();
  }
}
