// What `get` tells of a key's wait queue and lock-delay (§3 get): the waiters in queue order with
// the time each joined, and `lock_delay_until` only while the key is in lock-delay.
#include "tests/e2e/e2e.hpp"

using namespace e2e;

TEST_CASE("get lists the waiters in queue order and the lock-delay", "[e2e][coordination]") {
  Daemon d;
  auto holder = d.connect();
  auto c = d.connect();
  REQUIRE(holder.call(acquire_req(
              "q/k", "h", "\"ttl_ms\":600000,\"lock_delay_ms\":60000"))["status"] == "acquired");
  Json g = c.call(get_req("q/k"));
  CHECK(g["waiters"] == 0);
  REQUIRE(g["waiting"].is_array());
  CHECK(g["waiting"].size() == 0);
  CHECK_FALSE(g.has("lock_delay_until"));

  std::vector<LineClient> waiters;
  for (const char* owner : {"w1", "w2", "w3"}) {
    waiters.push_back(d.connect());
    waiters.back().send(acquire_req("q/k", owner, "\"wait_ms\":600000"));
    REQUIRE(wait_waiters(c, "q/k", waiters.size()));
  }
  g = c.call(get_req("q/k"));
  REQUIRE(g["waiting"].size() == 3);
  std::int64_t previous = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const Json& w = g["waiting"][i];
    CHECK(w["owner"] == "w" + std::to_string(i + 1));
    auto since = time_ms(w["since"]);
    REQUIRE(since.has_value());
    CHECK(*since >= previous);
    previous = *since;
  }
  // The first waiter leaves; the queue closes up.
  waiters.erase(waiters.begin());
  REQUIRE(wait_waiters(c, "q/k", 2));
  g = c.call(get_req("q/k"));
  REQUIRE(g["waiting"].size() == 2);
  CHECK(g["waiting"][0]["owner"] == "w2");

  // Revoked with a lock-delay: the key is free, the waiters wait it out, and get says until when.
  REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"q/k\"")["status"] == "revoked");
  g = c.call(get_req("q/k"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["waiters"] == 2);
  auto until = time_ms(g["lock_delay_until"]);
  REQUIRE(until.has_value());
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  CHECK(*until > now);
  CHECK(*until <= now + 60000);
}

TEST_CASE("get lists at most the first 100 waiters", "[e2e][coordination]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("q/many", "h", "\"ttl_ms\":600000"))["status"] == "acquired");
  auto w = d.connect();
  for (int i = 0; i < 105; ++i) {
    w.send(acquire_req("q/many", "w" + std::to_string(i), "\"wait_ms\":600000"));
  }
  REQUIRE(wait_waiters(c, "q/many", 105));
  Json g = c.call(get_req("q/many"));
  REQUIRE(g["waiting"].size() == 100);
  CHECK(g["waiting"][0]["owner"] == "w0");
  CHECK(g["waiting"][99]["owner"] == "w99");
}
