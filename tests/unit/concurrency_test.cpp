// Many threads, many keys: never two live holders of one key, tokens only go up.
#include <catch2/catch.hpp>
#include <map>
#include <mutex>

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
