// Coordination between clients: races, blocking acquire (wait queues), release_on_disconnect,
// and `lost` events (§3, §4).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/e2e.hpp"

using namespace e2e;

TEST_CASE("two connections racing for one key: exactly one acquires; every round",
          "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  auto b = d.connect();
  constexpr int kRounds = 200;
  int a_wins = 0, b_wins = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::string key = "race/" + std::to_string(round);
    // Both requests are on the wire before either reply is read; alternate who writes first.
    std::int64_t ia, ib;
    if (round % 2) {
      ia = a.send(acquire_req(key, "A", "\"ttl_ms\":30000"));
      ib = b.send(acquire_req(key, "B", "\"ttl_ms\":30000"));
    } else {
      ib = b.send(acquire_req(key, "B", "\"ttl_ms\":30000"));
      ia = a.send(acquire_req(key, "A", "\"ttl_ms\":30000"));
    }
    Json ra = a.reply(ia);
    Json rb = b.reply(ib);
    bool a_won = ra["status"] == "acquired";
    bool b_won = rb["status"] == "acquired";
    INFO("round " << round << ": A got " << ra.source() << ", B got " << rb.source());
    REQUIRE(a_won != b_won);
    const Json& win = a_won ? ra : rb;
    const Json& lose = a_won ? rb : ra;
    CHECK(win["token"] == 1);
    CHECK(win["fresh"] == true);
    CHECK(lose["status"] == "held");
    CHECK(lose["holder"] == (a_won ? "A" : "B"));
    CHECK(lose["token"] == 1);
    (a_won ? a_wins : b_wins)++;
  }
  CHECK(a_wins + b_wins == kRounds);
  // Exactly 200 tenures exist.
  Json s = a.call("\"op\":\"stats\"");
  CHECK(s["live_leases"] == kRounds);
}

TEST_CASE("two threads racing on a released key: one tenure per round; tokens consecutive",
          "[e2e][coordination]") {
  Daemon d;
  constexpr int kRounds = 100;
  auto a = d.connect();
  auto b = d.connect();
  std::uint64_t expected_token = 0;
  for (int round = 0; round < kRounds; ++round) {
    Json ra, rb;
    std::exception_ptr ea, eb;
    std::thread ta([&] {
      try {
        ra = a.call(acquire_req("hot", "A", "\"ttl_ms\":30000"));
      } catch (...) {
        ea = std::current_exception();
      }
    });
    std::thread tb([&] {
      try {
        rb = b.call(acquire_req("hot", "B", "\"ttl_ms\":30000"));
      } catch (...) {
        eb = std::current_exception();
      }
    });
    ta.join();
    tb.join();
    if (ea) std::rethrow_exception(ea);
    if (eb) std::rethrow_exception(eb);
    INFO("round " << round << ": A got " << ra.source() << ", B got " << rb.source());
    REQUIRE((ra["status"] == "acquired") != (rb["status"] == "acquired"));
    const Json& win = ra["status"] == "acquired" ? ra : rb;
    ++expected_token;
    CHECK(win["token"] == expected_token);
    REQUIRE(a.call(release_req("hot", win["owner"].str()))["status"] == "released");
  }
  CHECK(a.call(get_req("hot"))["last_token"] == expected_token);
}

TEST_CASE("blocking acquire is handed over on release; in the same step", "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  auto b = d.connect();
  auto third = d.connect();
  REQUIRE(a.call(acquire_req("q", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");
  auto wid = b.send(acquire_req("q", "bob", "\"ttl_ms\":30000,\"wait_ms\":20000"));
  REQUIRE(wait_waiters(a, "q", 1));
  CHECK_FALSE(b.has_reply(wid));

  Json rel = a.call(release_req("q", "alice"));
  REQUIRE(rel["status"] == "released");
  // No window for a third client: the key already belongs to bob when release is answered.
  Json t = third.call(acquire_req("q", "carol", "\"ttl_ms\":30000"));
  CHECK(t["status"] == "held");
  CHECK(t["holder"] == "bob");
  CHECK(t["token"] == 2);

  Json w = b.reply(wid);
  CHECK(w["status"] == "acquired");
  CHECK(w["fresh"] == true);
  check_lease_object(w, "q", "bob", 2, 30000);
  CHECK(w["revision"].u64() > rel["revision"].u64());
  Json g = a.call(get_req("q"));
  CHECK(g["lease"]["owner"] == "bob");
  CHECK(g["waiters"] == 0);
}

TEST_CASE("blocking acquire is handed over on expiry; and the old holder is told it lost",
          "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  auto b = d.connect();
  Json first = a.call(acquire_req("qe", "alice", "\"ttl_ms\":300"));
  REQUIRE(first["status"] == "acquired");
  auto wid = b.send(acquire_req("qe", "bob", "\"ttl_ms\":30000,\"wait_ms\":10000"));
  Json w = b.reply(wid, 15000ms);
  CHECK(w["status"] == "acquired");
  check_lease_object(w, "qe", "bob", 2, 30000);
  CHECK(*time_ms(w["acquired_at"]) >= *time_ms(first["expires_at"]));

  Json lost = a.event(5000ms);
  CHECK(lost["event"] == "lost");
  CHECK(lost["key"] == "qe");
  CHECK(lost["token"] == 1);
  CHECK(lost["reason"] == "expired");
  auto hist = full_history(a, "qe");
  REQUIRE(hist.size() == 2);
  CHECK(hist[1]["end"] == "expired");
  CHECK(hist[0]["owner"] == "bob");
  CHECK(hist[0]["end"] == nullptr);
}

TEST_CASE("several waiters are served first in; first out", "[e2e][coordination]") {
  Daemon d;
  auto holder = d.connect();
  std::vector<LineClient> waiters;
  std::vector<std::int64_t> ids;
  const std::vector<std::string> names = {"w1", "w2", "w3", "w4"};
  REQUIRE(holder.call(acquire_req("fifo", "h", "\"ttl_ms\":30000"))["status"] == "acquired");
  for (std::size_t i = 0; i < names.size(); ++i) {
    waiters.push_back(d.connect());
    ids.push_back(
        waiters[i].send(acquire_req("fifo", names[i], "\"ttl_ms\":30000,\"wait_ms\":30000")));
    // Make the queue order certain before the next one joins.
    REQUIRE(wait_waiters(holder, "fifo", i + 1));
  }
  std::string current = "h";
  for (std::size_t i = 0; i < names.size(); ++i) {
    REQUIRE(holder.call(release_req("fifo", current))["status"] == "released");
    Json r = waiters[i].reply(ids[i]);
    INFO("waiter " << names[i]);
    CHECK(r["status"] == "acquired");
    CHECK(r["owner"] == names[i]);
    CHECK(r["token"] == i + 2);
    for (std::size_t j = i + 1; j < names.size(); ++j) CHECK_FALSE(waiters[j].has_reply(ids[j]));
    Json g = holder.call(get_req("fifo"));
    CHECK(g["lease"]["owner"] == names[i]);
    CHECK(g["waiters"] == names.size() - i - 1);
    current = names[i];
  }
}

TEST_CASE("a waiter whose wait_ms runs out gets held and leaves the queue", "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  auto b = d.connect();
  Json mine = a.call(acquire_req("wt", "alice", "\"ttl_ms\":30000"));
  REQUIRE(mine["status"] == "acquired");
  Json r = b.call(acquire_req("wt", "bob", "\"ttl_ms\":30000,\"wait_ms\":300"), 10000ms);
  CHECK(r["status"] == "held");
  CHECK(r["key"] == "wt");
  CHECK(r["holder"] == "alice");
  CHECK(r["token"] == 1);
  CHECK(r["expires_at"] == mine["expires_at"].str());
  CHECK(a.call(get_req("wt"))["waiters"] == 0);
  // A later release does not hand the key to the timed-out waiter.
  REQUIRE(a.call(release_req("wt", "alice"))["status"] == "released");
  CHECK(live_lease(a, "wt") == nullptr);
}

TEST_CASE("a waiting acquire does not hold back other requests on the connection",
          "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  auto b = d.connect();
  REQUIRE(a.call(acquire_req("blk", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");
  auto wid = b.send(acquire_req("blk", "bob", "\"wait_ms\":20000"));
  // Other keys, and pings, on the same connection are answered meanwhile.
  CHECK(b.call("\"op\":\"ping\"")["status"] == "pong");
  CHECK(b.call(acquire_req("other", "bob", "\"ttl_ms\":30000"))["status"] == "acquired");
  CHECK_FALSE(b.has_reply(wid));
  REQUIRE(a.call(release_req("blk", "alice"))["status"] == "released");
  CHECK(b.reply(wid)["status"] == "acquired");
}

TEST_CASE("a waiter that disconnects leaves the queue", "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  REQUIRE(a.call(acquire_req("wd", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");
  {
    auto b = d.connect();
    b.send(acquire_req("wd", "bob", "\"ttl_ms\":30000,\"wait_ms\":30000"));
    REQUIRE(wait_waiters(a, "wd", 1));
    b.close();
  }
  CHECK(wait_waiters(a, "wd", 0));
  REQUIRE(a.call(release_req("wd", "alice"))["status"] == "released");
  Json g = a.call(get_req("wd"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 1);
}

TEST_CASE("release_on_disconnect frees the key when the acquiring connection closes",
          "[e2e][coordination]") {
  Daemon d;
  auto watcher = d.connect();

  SECTION("the client closes its socket") {
    auto c = d.connect();
    Json r = c.call(acquire_req("rod", "eph", "\"ttl_ms\":600000,\"release_on_disconnect\":true"));
    REQUIRE(r["status"] == "acquired");
    c.close();
  }
  SECTION("the client process is killed with SIGKILL") {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::close(ready[0]);
      char ok = 'n';
      try {
        LineClient c(d.socket_path());
        Json r =
            c.call(acquire_req("rod", "eph", "\"ttl_ms\":600000,\"release_on_disconnect\":true"));
        if (r["status"] == "acquired") ok = 'y';
        (void)!::write(ready[1], &ok, 1);
        for (;;) ::pause();  // hold the connection open until killed
      } catch (...) {
      }
      (void)!::write(ready[1], &ok, 1);
      ::_exit(1);
    }
    ::close(ready[1]);
    char ok = 0;
    REQUIRE(::read(ready[0], &ok, 1) == 1);
    ::close(ready[0]);
    Json g = watcher.call(get_req("rod"));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    REQUIRE(ok == 'y');
    CHECK(g["lease"]["owner"] == "eph");
  }

  CHECK(wait_free(watcher, "rod", 5000ms));
  Json h = watcher.call(history_req("rod"));
  REQUIRE(h["tenures"].size() == 1);
  CHECK(h["tenures"][0]["end"] == "released");
  Json r = watcher.call(acquire_req("rod", "next", "\"ttl_ms\":30000"));
  CHECK(r["status"] == "acquired");
  CHECK(r["token"] == 2);
}

TEST_CASE("without release_on_disconnect a lease outlives its connection", "[e2e][coordination]") {
  Daemon d;
  {
    auto c = d.connect();
    REQUIRE(c.call(acquire_req("keep", "o", "\"ttl_ms\":600000"))["status"] == "acquired");
  }
  auto w = d.connect();
  std::this_thread::sleep_for(300ms);
  CHECK(live_lease(w, "keep")["owner"] == "o");
}

TEST_CASE("lost is delivered on expiry to the acquiring connection only", "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  auto other = d.connect();
  Json acq = a.call(acquire_req("lost/1", "alice", "\"ttl_ms\":200"));
  REQUIRE(acq["status"] == "acquired");
  Json e = a.event(5000ms);
  CHECK(e["event"] == "lost");
  CHECK(e["key"] == "lost/1");
  CHECK(e["token"] == 1);
  CHECK(e["reason"] == "expired");
  REQUIRE(time_ms(e["at"]).has_value());
  CHECK(*time_ms(e["at"]) >= *time_ms(acq["expires_at"]));
  CHECK(e["revision"].is_integer());
  CHECK(e["revision"].u64() > acq["revision"].u64());
  CHECK(other.queued_events() == 0);
  // The connection keeps working, and a voluntary release sends no lost event.
  REQUIRE(a.call(acquire_req("lost/2", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");
  REQUIRE(a.call(release_req("lost/2", "alice"))["status"] == "released");
  CHECK_FALSE(a.next_event(300ms).has_value());
}

TEST_CASE("idempotent re-acquire moves the lost notification to the latest connection",
          "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  auto b = d.connect();
  REQUIRE(a.call(acquire_req("move", "sess", "\"ttl_ms\":30000"))["status"] == "acquired");
  Json again = b.call(acquire_req("move", "sess", "\"ttl_ms\":300"));
  REQUIRE(again["status"] == "acquired");
  CHECK(again["fresh"] == false);
  Json e = b.event(5000ms);
  CHECK(e["event"] == "lost");
  CHECK(e["key"] == "move");
  CHECK(e["reason"] == "expired");
  CHECK(a.queued_events() == 0);
}

TEST_CASE("blocking acquire is handed over on revoke and on a release_on_disconnect close",
          "[e2e][coordination]") {
  Daemon d;
  auto admin = d.connect();
  auto w = d.connect();
  SECTION("revoke") {
    auto holder = d.connect();
    REQUIRE(holder.call(acquire_req("hv", "h", "\"ttl_ms\":600000"))["status"] == "acquired");
    auto id = w.send(acquire_req("hv", "w", "\"ttl_ms\":30000,\"wait_ms\":20000"));
    REQUIRE(wait_waiters(admin, "hv", 1));
    REQUIRE(admin.call("\"op\":\"revoke\",\"key\":\"hv\"")["status"] == "revoked");
    Json r = w.reply(id);
    CHECK(r["status"] == "acquired");
    CHECK(r["token"] == 2);
    Json lost = holder.event(5000ms);
    CHECK(lost["event"] == "lost");
    CHECK(lost["reason"] == "revoked");
  }
  SECTION("the holder's connection closes") {
    {
      auto holder = d.connect();
      REQUIRE(holder.call(acquire_req(
                  "hv", "h", "\"ttl_ms\":600000,\"release_on_disconnect\":true"))["status"] ==
              "acquired");
      auto id = w.send(acquire_req("hv", "w", "\"ttl_ms\":30000,\"wait_ms\":20000"));
      REQUIRE(wait_waiters(admin, "hv", 1));
      holder.close();
      Json r = w.reply(id);
      CHECK(r["status"] == "acquired");
      CHECK(r["token"] == 2);
    }
    auto h = full_history(admin, "hv");
    REQUIRE(h.size() == 2);
    CHECK(h[1]["end"] == "released");
  }
  CHECK(live_lease(admin, "hv")["owner"] == "w");
}

TEST_CASE("a disconnected first waiter is skipped: the next waiter gets the key",
          "[e2e][coordination]") {
  Daemon d;
  auto a = d.connect();
  auto w2 = d.connect();
  REQUIRE(a.call(acquire_req("skip", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");
  std::int64_t id2 = 0;
  {
    auto w1 = d.connect();
    w1.send(acquire_req("skip", "w1", "\"ttl_ms\":30000,\"wait_ms\":30000"));
    REQUIRE(wait_waiters(a, "skip", 1));
    id2 = w2.send(acquire_req("skip", "w2", "\"ttl_ms\":30000,\"wait_ms\":30000"));
    REQUIRE(wait_waiters(a, "skip", 2));
    w1.close();
  }
  REQUIRE(wait_waiters(a, "skip", 1));
  REQUIRE(a.call(release_req("skip", "alice"))["status"] == "released");
  Json r = w2.reply(id2);
  CHECK(r["status"] == "acquired");
  CHECK(r["owner"] == "w2");
  CHECK(r["token"] == 2);
  CHECK(a.call(get_req("skip"))["last_token"] == 2);
}
