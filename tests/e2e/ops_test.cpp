// Every op and status of the wire contract (§3), one real tenured per test case.
#include "tests/e2e/e2e.hpp"

using namespace e2e;

TEST_CASE("acquire on a free key starts a fresh tenure with token 1", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  Json r = c.call(acquire_req("svc/a", "alice", "\"ttl_ms\":30000"));
  CHECK(r["status"] == "acquired");
  CHECK(r["fresh"] == true);
  check_lease_object(r, "svc/a", "alice", 1, 30000);
  CHECK(r["revision"].is_integer());
  CHECK(r["revision"].u64() >= 1);
  auto acquired = time_ms(r["acquired_at"]);
  auto expires = time_ms(r["expires_at"]);
  REQUIRE(acquired);
  REQUIRE(expires);
  CHECK(*expires - *acquired >= 30000);
  CHECK(*expires - *acquired <= 31000);
  CHECK(std::abs(*acquired - wall_now_ms()) < 60000);

  Json g = c.call(get_req("svc/a"));
  CHECK(g["status"] == "ok");
  CHECK(g["key"] == "svc/a");
  check_lease_object(g["lease"], "svc/a", "alice", 1, 30000);
  CHECK(g["lease"]["expires_at"] == r["expires_at"].str());
  CHECK(g["last_token"] == 1);
  CHECK(g["waiters"] == 0);
}

TEST_CASE("acquire ttl_ms defaults to 900000 and is clamped to [min_ttl; max_ttl]", "[e2e][ops]") {
  SECTION("server defaults: 10 ms .. 24 h") {
    Daemon d;
    auto c = d.connect();
    Json r = c.call(acquire_req("t/default", "o"));
    CHECK(r["status"] == "acquired");
    CHECK(r["ttl_ms"] == 900000);
    r = c.call(acquire_req("t/low", "o", "\"ttl_ms\":1"));
    CHECK(r["status"] == "acquired");
    CHECK(r["ttl_ms"] == 10);
    r = c.call(acquire_req("t/high", "o", "\"ttl_ms\":100000000000"));
    CHECK(r["status"] == "acquired");
    CHECK(r["ttl_ms"] == 86400000);
    CHECK(c.call(get_req("t/high"))["lease"]["ttl_ms"] == 86400000);
  }
  SECTION("--min-ttl / --max-ttl / --default-ttl flags") {
    Daemon d({"--min-ttl", "50ms", "--max-ttl", "1h", "--default-ttl", "30s"});
    auto c = d.connect();
    CHECK(c.call(acquire_req("t/default", "o"))["ttl_ms"] == 30000);
    CHECK(c.call(acquire_req("t/low", "o", "\"ttl_ms\":1"))["ttl_ms"] == 50);
    CHECK(c.call(acquire_req("t/high", "o", "\"ttl_ms\":999999999"))["ttl_ms"] == 3600000);
    CHECK(c.call(renew_req("t/low", "o", "\"ttl_ms\":2"))["ttl_ms"] == 50);
  }
  SECTION("zero or negative ttl_ms is bad_request and changes nothing") {
    Daemon d;
    auto c = d.connect();
    check_error(c.call(acquire_req("t/zero", "o", "\"ttl_ms\":0")), "bad_request", "ttl_ms");
    check_error(c.call(acquire_req("t/neg", "o", "\"ttl_ms\":-5")), "bad_request", "ttl_ms");
    Json g = c.call(get_req("t/zero"));
    CHECK(g["lease"] == nullptr);
    CHECK(g["last_token"] == 0);
  }
}

TEST_CASE("acquire by the same owner is idempotent: token kept; expiry and options replaced",
          "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  Json first = c.call(acquire_req("idem", "alice", "\"ttl_ms\":30000"));
  REQUIRE(first["status"] == "acquired");
  Json again = c.call(acquire_req("idem", "alice", "\"ttl_ms\":60000"));
  CHECK(again["status"] == "acquired");
  CHECK(again["fresh"] == false);
  check_lease_object(again, "idem", "alice", 1, 60000);
  CHECK(again["acquired_at"] == first["acquired_at"].str());
  CHECK(again["revision"].u64() > first["revision"].u64());
  CHECK(*time_ms(again["expires_at"]) >= *time_ms(first["expires_at"]) + 29000);

  // The options of the latest call replace the old ones: open-ended, then timed again.
  Json open = c.call(acquire_req("idem", "alice", "\"open_ended\":true"));
  CHECK(open["status"] == "acquired");
  CHECK(open["fresh"] == false);
  check_lease_object(open, "idem", "alice", 1, 0);
  Json timed = c.call(acquire_req("idem", "alice", "\"ttl_ms\":20000"));
  CHECK(timed["fresh"] == false);
  check_lease_object(timed, "idem", "alice", 1, 20000);

  Json g = c.call(get_req("idem"));
  check_lease_object(g["lease"], "idem", "alice", 1, 20000);
  CHECK(g["last_token"] == 1);
  // Still one tenure in the ledger.
  Json h = c.call(history_req("idem"));
  CHECK(h["tenures"].size() == 1);
}

TEST_CASE("acquire of a key held by another owner answers held with holder; token; expires_at",
          "[e2e][ops]") {
  Daemon d;
  auto a = d.connect();
  auto b = d.connect();
  Json mine = a.call(acquire_req("busy", "alice", "\"ttl_ms\":30000"));
  REQUIRE(mine["status"] == "acquired");
  for (const char* extra : {"\"ttl_ms\":1000", "\"ttl_ms\":1000,\"wait_ms\":0"}) {
    Json r = b.call(acquire_req("busy", "bob", extra));
    CHECK(r["status"] == "held");
    CHECK(r["key"] == "busy");
    CHECK(r["holder"] == "alice");
    CHECK(r["token"] == 1);
    CHECK(r["expires_at"] == mine["expires_at"].str());
    CHECK_FALSE(r.has("fresh"));
  }
  Json g = a.call(get_req("busy"));
  CHECK(g["lease"]["owner"] == "alice");
  CHECK(g["lease"]["token"] == 1);
  CHECK(g["last_token"] == 1);
}

TEST_CASE("tokens grow by one per tenure across release; expiry and revoke", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  Json r = c.call(acquire_req("tok", "a", "\"ttl_ms\":30000"));
  CHECK(r["token"] == 1);
  CHECK(c.call(release_req("tok", "a"))["status"] == "released");
  r = c.call(acquire_req("tok", "b", "\"ttl_ms\":200"));
  CHECK(r["status"] == "acquired");
  CHECK(r["token"] == 2);
  REQUIRE(wait_free(c, "tok"));
  r = c.call(acquire_req("tok", "c", "\"ttl_ms\":30000"));
  CHECK(r["fresh"] == true);
  CHECK(r["token"] == 3);
  CHECK(c.call("\"op\":\"revoke\",\"key\":\"tok\"")["status"] == "revoked");
  r = c.call(acquire_req("tok", "c", "\"ttl_ms\":30000"));
  CHECK(r["fresh"] == true);
  CHECK(r["token"] == 4);
  CHECK(c.call(get_req("tok"))["last_token"] == 4);
}

TEST_CASE("acquire open_ended never expires; ttl_ms with open_ended is bad_request", "[e2e][ops]") {
  // A short default TTL, so that an open-ended lease treated as timed would visibly expire.
  Daemon d({"--default-ttl", "200ms"});
  auto c = d.connect();
  Json r = c.call(acquire_req("assign/1", "human", "\"open_ended\":true"));
  CHECK(r["status"] == "acquired");
  CHECK(r["fresh"] == true);
  check_lease_object(r, "assign/1", "human", 1, 0);
  check_error(c.call(acquire_req("assign/2", "human", "\"open_ended\":true,\"ttl_ms\":1000")),
              "bad_request", "");
  CHECK(c.call(get_req("assign/2"))["last_token"] == 0);
  // open_ended:false with a ttl is not contradictory.
  CHECK(c.call(acquire_req("assign/3", "human",
                           "\"open_ended\":false,\"ttl_ms\":30000"))["status"] == "acquired");

  std::this_thread::sleep_for(1000ms);
  Json g = c.call(get_req("assign/1"));
  check_lease_object(g["lease"], "assign/1", "human", 1, 0);
  Json l = c.call("\"op\":\"list\",\"prefix\":\"assign/1\"");
  REQUIRE(l["leases"].size() == 1);
  check_lease_object(l["leases"][0], "assign/1", "human", 1, 0);
  Json chk = c.call("\"op\":\"check\",\"key\":\"assign/1\",\"token\":1");
  CHECK(chk["status"] == "valid");
  CHECK(chk["expires_at"] == nullptr);
}

TEST_CASE("lock_delay_ms: after an involuntary loss the key answers held/lock_delay",
          "[e2e][ops]") {
  Daemon d;
  auto a = d.connect();
  auto b = d.connect();

  SECTION("after expiry; a waiter waits it out") {
    REQUIRE(a.call(acquire_req("ld", "alice", "\"ttl_ms\":200,\"lock_delay_ms\":3000"))["status"] ==
            "acquired");
    REQUIRE(wait_free(b, "ld"));
    Json r = b.call(acquire_req("ld", "bob", "\"ttl_ms\":30000"));
    CHECK(r["status"] == "held");
    CHECK(r["reason"] == "lock_delay");
    CHECK(r["holder"] == nullptr);
    CHECK(r["token"] == 1);
    CHECK(r["retry_after_ms"].is_integer());
    CHECK(r["retry_after_ms"].i64() > 0);
    CHECK(r["retry_after_ms"].i64() <= 3000);

    Json w = b.call(acquire_req("ld", "bob", "\"ttl_ms\":30000,\"wait_ms\":15000"), 20000ms);
    CHECK(w["status"] == "acquired");
    CHECK(w["token"] == 2);
    auto hist = full_history(b, "ld");
    REQUIRE(hist.size() == 2);
    CHECK(hist[1]["end"] == "expired");
    auto ended = time_ms(hist[1]["ended_at"]);
    auto started = time_ms(hist[0]["acquired_at"]);
    REQUIRE(ended);
    REQUIRE(started);
    CHECK(*started >= *ended + 3000 - 5);
  }
  SECTION("after revoke") {
    REQUIRE(a.call(acquire_req("ld", "alice",
                               "\"ttl_ms\":30000,\"lock_delay_ms\":3000"))["status"] == "acquired");
    REQUIRE(a.call("\"op\":\"revoke\",\"key\":\"ld\"")["status"] == "revoked");
    Json r = b.call(acquire_req("ld", "bob", "\"ttl_ms\":30000"));
    CHECK(r["status"] == "held");
    CHECK(r["reason"] == "lock_delay");
    CHECK(r["holder"] == nullptr);
    CHECK(r["token"] == 1);
  }
  SECTION("not after a voluntary release") {
    REQUIRE(a.call(acquire_req("ld", "alice",
                               "\"ttl_ms\":30000,\"lock_delay_ms\":3000"))["status"] == "acquired");
    REQUIRE(a.call(release_req("ld", "alice"))["status"] == "released");
    Json r = b.call(acquire_req("ld", "bob", "\"ttl_ms\":30000"));
    CHECK(r["status"] == "acquired");
    CHECK(r["token"] == 2);
  }
}

TEST_CASE("renew of the owner's live lease: renewed; token kept; new expiry", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  Json a = c.call(acquire_req("rn", "alice", "\"ttl_ms\":30000"));
  REQUIRE(a["status"] == "acquired");
  Json r = c.call(renew_req("rn", "alice", "\"ttl_ms\":60000"));
  CHECK(r["status"] == "renewed");
  check_lease_object(r, "rn", "alice", 1, 60000);
  CHECK(r["revision"].u64() > a["revision"].u64());
  CHECK(*time_ms(r["expires_at"]) >= *time_ms(a["expires_at"]) + 29000);

  // ttl omitted: the lease's own ttl_ms.
  Json r2 = c.call(renew_req("rn", "alice"));
  CHECK(r2["status"] == "renewed");
  CHECK(r2["ttl_ms"] == 60000);
  CHECK(r2["revision"].u64() > r["revision"].u64());
  // With the right token.
  Json r3 = c.call(renew_req("rn", "alice", "\"token\":1,\"ttl_ms\":45000"));
  CHECK(r3["status"] == "renewed");
  check_lease_object(r3, "rn", "alice", 1, 45000);
  CHECK(c.call(get_req("rn"))["lease"]["ttl_ms"] == 45000);
  CHECK(c.call(history_req("rn"))["tenures"].size() == 1);
}

TEST_CASE("renew keeps a short lease alive past its first deadline", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  // 8 renews 250 ms apart outlast the first 1.5 s deadline, with 1.25 s to spare per renew for a
  // loaded machine's oversleeping and fsync.
  REQUIRE(c.call(acquire_req("alive", "alice", "\"ttl_ms\":1500"))["status"] == "acquired");
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(250ms);
    REQUIRE(c.call(renew_req("alive", "alice"))["status"] == "renewed");
  }
  Json g = c.call(get_req("alive"));
  CHECK(g["lease"]["owner"] == "alice");
  CHECK(g["lease"]["token"] == 1);
}

TEST_CASE("renew not_holder reasons: held_by_other; free; token_mismatch; expired", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("nh", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");

  Json r = c.call(renew_req("nh", "bob"));
  CHECK(r["status"] == "not_holder");
  CHECK(r["key"] == "nh");
  CHECK(r["reason"] == "held_by_other");
  CHECK(r["holder"] == "alice");
  CHECK(r["token"] == 1);

  r = c.call(renew_req("never", "alice"));
  CHECK(r["status"] == "not_holder");
  CHECK(r["key"] == "never");
  CHECK(r["reason"] == "free");
  CHECK(r["holder"] == nullptr);
  CHECK(r["token"] == nullptr);

  r = c.call(renew_req("nh", "alice", "\"token\":7"));
  CHECK(r["status"] == "not_holder");
  CHECK(r["reason"] == "token_mismatch");
  CHECK(r["holder"] == "alice");
  CHECK(r["token"] == 1);

  REQUIRE(c.call(acquire_req("short", "alice", "\"ttl_ms\":200"))["status"] == "acquired");
  REQUIRE(wait_free(c, "short"));
  r = c.call(renew_req("short", "alice"));
  CHECK(r["status"] == "not_holder");
  CHECK(r["reason"] == "expired");
  CHECK(r["holder"] == nullptr);
  CHECK(r["token"] == nullptr);
  // A failed renew changed nothing.
  Json g = c.call(get_req("nh"));
  CHECK(g["lease"]["owner"] == "alice");
  CHECK(g["lease"]["ttl_ms"] == 30000);
}

TEST_CASE("renew of an open-ended lease is a no-op that succeeds", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("oe", "alice", "\"open_ended\":true"))["status"] == "acquired");
  Json before = c.call("\"op\":\"stats\"");
  Json r = c.call(renew_req("oe", "alice"));
  CHECK(r["status"] == "renewed");
  check_lease_object(r, "oe", "alice", 1, 0);
  CHECK(r["revision"] == before["revision"].u64());
  CHECK(c.call("\"op\":\"stats\"")["revision"] == before["revision"].u64());
}

TEST_CASE("release: released; then idempotent with token null; not_holder for others",
          "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  Json a = c.call(acquire_req("rel", "alice", "\"ttl_ms\":30000"));
  REQUIRE(a["status"] == "acquired");

  Json r = c.call(release_req("rel", "bob"));
  CHECK(r["status"] == "not_holder");
  CHECK(r["key"] == "rel");
  CHECK(r["reason"] == "held_by_other");
  CHECK(r["holder"] == "alice");
  CHECK(r["token"] == 1);

  r = c.call(release_req("rel", "alice", "\"token\":2"));
  CHECK(r["status"] == "not_holder");
  CHECK(r["reason"] == "token_mismatch");
  CHECK(r["holder"] == "alice");
  CHECK(r["token"] == 1);
  CHECK(c.call(get_req("rel"))["lease"]["owner"] == "alice");

  r = c.call(release_req("rel", "alice", "\"token\":1"));
  CHECK(r["status"] == "released");
  CHECK(r["key"] == "rel");
  CHECK(r["token"] == 1);
  CHECK(r["revision"].u64() > a["revision"].u64());
  Json g = c.call(get_req("rel"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 1);

  r = c.call(release_req("rel", "alice"));
  CHECK(r["status"] == "released");
  CHECK(r["key"] == "rel");
  CHECK(r["token"] == nullptr);

  r = c.call(release_req("never-leased", "alice"));
  CHECK(r["status"] == "released");
  CHECK(r["token"] == nullptr);

  // A lease that already ran out: idempotent success, and the ledger says expired.
  REQUIRE(c.call(acquire_req("gone", "alice", "\"ttl_ms\":200"))["status"] == "acquired");
  REQUIRE(wait_free(c, "gone"));
  r = c.call(release_req("gone", "alice"));
  CHECK(r["status"] == "released");
  CHECK(r["token"] == nullptr);
  Json h = c.call(history_req("gone"));
  REQUIRE(h["tenures"].size() == 1);
  CHECK(h["tenures"][0]["end"] == "expired");
}

TEST_CASE("keepalive renews every live lease of the owner and counts them", "[e2e][ops]") {
  Daemon d;
  auto c1 = d.connect();
  auto c2 = d.connect();
  for (const char* k : {"ka/1", "ka/2"}) {
    REQUIRE(c1.call(acquire_req(k, "sess", "\"ttl_ms\":5000"))["status"] == "acquired");
  }
  REQUIRE(c2.call(acquire_req("ka/3", "sess", "\"ttl_ms\":5000"))["status"] == "acquired");
  REQUIRE(c2.call(acquire_req("ka/4", "other", "\"ttl_ms\":30000"))["status"] == "acquired");

  Json r = c1.call("\"op\":\"keepalive\",\"owner\":\"sess\",\"ttl_ms\":30000");
  CHECK(r["status"] == "renewed");
  CHECK(r["count"] == 3);
  CHECK(r["revision"].is_integer());

  r = c1.call("\"op\":\"keepalive\",\"owner\":\"other\"");
  CHECK(r["status"] == "renewed");
  CHECK(r["count"] == 1);
  r = c1.call("\"op\":\"keepalive\",\"owner\":\"nobody-holds-anything\"");
  CHECK(r["status"] == "renewed");
  CHECK(r["count"] == 0);

  // Past the deadlines they were acquired with, with time to spare for the four writes before.
  std::this_thread::sleep_for(5500ms);
  for (const char* k : {"ka/1", "ka/2", "ka/3"}) {
    Json g = c1.call(get_req(k));
    INFO(k);
    CHECK(g["lease"]["owner"] == "sess");
    CHECK(g["lease"]["ttl_ms"] == 30000);
    CHECK(g["lease"]["token"] == 1);
  }
}

TEST_CASE("check: valid for the live tenure; not_holder otherwise", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  Json a = c.call(acquire_req("fence", "alice", "\"ttl_ms\":30000"));
  REQUIRE(a["status"] == "acquired");

  Json r = c.call("\"op\":\"check\",\"key\":\"fence\",\"token\":1");
  CHECK(r["status"] == "valid");
  CHECK(r["expires_at"] == a["expires_at"].str());
  r = c.call("\"op\":\"check\",\"key\":\"fence\",\"token\":1,\"owner\":\"alice\"");
  CHECK(r["status"] == "valid");

  r = c.call("\"op\":\"check\",\"key\":\"fence\",\"token\":1,\"owner\":\"mallory\"");
  CHECK(r["status"] == "not_holder");
  CHECK(r["holder"] == "alice");
  CHECK(r["token"] == 1);

  r = c.call("\"op\":\"check\",\"key\":\"fence\",\"token\":2");
  CHECK(r["status"] == "not_holder");
  CHECK(r["key"] == "fence");
  CHECK(r["reason"] == "token_mismatch");
  CHECK(r["holder"] == "alice");
  CHECK(r["token"] == 1);

  r = c.call("\"op\":\"check\",\"key\":\"unknown\",\"token\":1");
  CHECK(r["status"] == "not_holder");
  CHECK(r["reason"] == "free");
  CHECK(r["holder"] == nullptr);
  CHECK(r["token"] == nullptr);

  REQUIRE(c.call(release_req("fence", "alice"))["status"] == "released");
  r = c.call("\"op\":\"check\",\"key\":\"fence\",\"token\":1");
  CHECK(r["status"] == "not_holder");
  CHECK(r["reason"] == "free");

  REQUIRE(c.call(acquire_req("fence2", "alice", "\"ttl_ms\":200"))["status"] == "acquired");
  REQUIRE(wait_free(c, "fence2"));
  r = c.call("\"op\":\"check\",\"key\":\"fence2\",\"token\":1,\"owner\":\"alice\"");
  CHECK(r["status"] == "not_holder");
  CHECK((r["reason"] == "expired" || r["reason"] == "free"));
}

TEST_CASE("get: lease object or null; last_token; waiters", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  Json g = c.call(get_req("g/never"));
  CHECK(g["status"] == "ok");
  CHECK(g["key"] == "g/never");
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 0);
  CHECK(g["waiters"] == 0);

  REQUIRE(c.call(acquire_req("g/k", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");
  g = c.call(get_req("g/k"));
  check_lease_object(g["lease"], "g/k", "alice", 1, 30000);
  CHECK(g["last_token"] == 1);
  CHECK(g["waiters"] == 0);

  auto w = d.connect();
  auto id = w.send(acquire_req("g/k", "bob", "\"wait_ms\":10000"));
  CHECK(wait_waiters(c, "g/k", 1));
  REQUIRE(c.call(release_req("g/k", "alice"))["status"] == "released");
  Json granted = w.reply(id);
  CHECK(granted["status"] == "acquired");
  g = c.call(get_req("g/k"));
  CHECK(g["lease"]["owner"] == "bob");
  CHECK(g["last_token"] == 2);
  CHECK(g["waiters"] == 0);
  REQUIRE(c.call(release_req("g/k", "bob"))["status"] == "released");
  g = c.call(get_req("g/k"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 2);
}

TEST_CASE("list: prefix; key order; limit and next paging", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  // Acquired out of order; b/1 and "a" (no slash) must not match prefix "a/".
  for (const char* k : {"a/3", "a/1", "b/1", "a/5", "a/2", "a/4", "a"}) {
    REQUIRE(c.call(acquire_req(k, "lister", "\"ttl_ms\":30000"))["status"] == "acquired");
  }
  REQUIRE(c.call(acquire_req("a/gone", "lister", "\"ttl_ms\":30000"))["status"] == "acquired");
  REQUIRE(c.call(release_req("a/gone", "lister"))["status"] == "released");

  Json p1 = c.call("\"op\":\"list\",\"prefix\":\"a/\",\"limit\":2");
  CHECK(p1["status"] == "ok");
  REQUIRE(p1["leases"].size() == 2);
  check_lease_object(p1["leases"][0], "a/1", "lister", 1, 30000);
  CHECK(p1["leases"][1]["key"] == "a/2");
  CHECK(p1["next"] == "a/2");

  Json p2 = c.call("\"op\":\"list\",\"prefix\":\"a/\",\"limit\":2,\"after\":\"a/2\"");
  REQUIRE(p2["leases"].size() == 2);
  CHECK(p2["leases"][0]["key"] == "a/3");
  CHECK(p2["leases"][1]["key"] == "a/4");
  CHECK(p2["next"] == "a/4");

  Json p3 = c.call("\"op\":\"list\",\"prefix\":\"a/\",\"limit\":2,\"after\":\"a/4\"");
  REQUIRE(p3["leases"].size() == 1);
  CHECK(p3["leases"][0]["key"] == "a/5");
  CHECK(p3["next"] == nullptr);

  Json all = c.call("\"op\":\"list\"");
  CHECK(all["status"] == "ok");
  REQUIRE(all["leases"].size() == 7);
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < all["leases"].size(); ++i)
    keys.push_back(all["leases"][i]["key"].str());
  CHECK(keys == std::vector<std::string>{"a", "a/1", "a/2", "a/3", "a/4", "a/5", "b/1"});
  CHECK(all["next"] == nullptr);

  Json none = c.call("\"op\":\"list\",\"prefix\":\"zzz/\"");
  CHECK(none["leases"].size() == 0);
  CHECK(none["leases"].is_array());
  CHECK(none["next"] == nullptr);

  // A limit above the max is clamped, not refused.
  Json big = c.call("\"op\":\"list\",\"limit\":20000");
  CHECK(big["status"] == "ok");
  CHECK(big["leases"].size() == 7);
}

TEST_CASE("list pages through more than the default limit of 100", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 150; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "many/%03d", i);
    ids.push_back(c.send(acquire_req(key, "o", "\"ttl_ms\":60000")));
  }
  for (auto id : ids) REQUIRE(c.reply(id)["status"] == "acquired");
  Json p1 = c.call("\"op\":\"list\",\"prefix\":\"many/\"");
  REQUIRE(p1["leases"].size() == 100);
  CHECK(p1["leases"][99]["key"] == "many/099");
  CHECK(p1["next"] == "many/099");
  Json p2 = c.call("\"op\":\"list\",\"prefix\":\"many/\",\"after\":\"many/099\"");
  REQUIRE(p2["leases"].size() == 50);
  CHECK(p2["leases"][0]["key"] == "many/100");
  CHECK(p2["next"] == nullptr);
}

TEST_CASE("history: tenures newest first with end reasons; paging with next", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("h", "o1", "\"ttl_ms\":30000"))["status"] == "acquired");
  REQUIRE(c.call(release_req("h", "o1"))["status"] == "released");
  REQUIRE(c.call(acquire_req("h", "o2", "\"ttl_ms\":200"))["status"] == "acquired");
  REQUIRE(wait_free(c, "h"));
  REQUIRE(c.call(acquire_req("h", "o3", "\"ttl_ms\":30000"))["status"] == "acquired");
  REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"h\",\"reason\":\"test\"")["status"] == "revoked");
  REQUIRE(c.call(acquire_req("h", "o4", "\"ttl_ms\":30000"))["status"] == "acquired");

  Json h = c.call(history_req("h"));
  CHECK(h["status"] == "ok");
  CHECK(h["next"] == nullptr);
  REQUIRE(h["tenures"].size() == 4);
  const char* owners[] = {"o4", "o3", "o2", "o1"};
  const char* ends[] = {nullptr, "revoked", "expired", "released"};
  for (int i = 0; i < 4; ++i) {
    Json t = h["tenures"][i];
    INFO("tenure " << i << ": " << t.dump());
    CHECK(t["token"] == 4 - i);
    CHECK(t["owner"] == owners[i]);
    CHECK(time_ms(t["acquired_at"]).has_value());
    if (ends[i]) {
      CHECK(t["end"] == ends[i]);
      REQUIRE(time_ms(t["ended_at"]).has_value());
      CHECK(*time_ms(t["ended_at"]) >= *time_ms(t["acquired_at"]));
    } else {
      CHECK(t["end"] == nullptr);
      CHECK(t["ended_at"] == nullptr);
    }
  }
  // The expired tenure ended no earlier than its deadline.
  CHECK(*time_ms(h["tenures"][2]["ended_at"]) >= *time_ms(h["tenures"][2]["acquired_at"]) + 200);

  // Pages of two: [4,3], then from next: [2,1], then nothing more.
  Json p1 = c.call(history_req("h", "\"limit\":2"));
  REQUIRE(p1["tenures"].size() == 2);
  CHECK(p1["tenures"][0]["token"] == 4);
  CHECK(p1["tenures"][1]["token"] == 3);
  REQUIRE(p1["next"].is_integer());
  Json p2 = c.call(history_req("h", "\"limit\":2,\"before_token\":" + p1["next"].dump()));
  REQUIRE(p2["tenures"].size() == 2);
  CHECK(p2["tenures"][0]["token"] == 2);
  CHECK(p2["tenures"][1]["token"] == 1);
  if (!p2["next"].is_null()) {
    Json p3 = c.call(history_req("h", "\"limit\":2,\"before_token\":" + p2["next"].dump()));
    CHECK(p3["tenures"].size() == 0);
    CHECK(p3["next"] == nullptr);
  }
  Json p4 = c.call(history_req("h", "\"before_token\":3"));
  REQUIRE(p4["tenures"].size() == 2);
  CHECK(p4["tenures"][0]["token"] == 2);

  Json empty = c.call(history_req("h/never"));
  CHECK(empty["status"] == "ok");
  CHECK(empty["tenures"].is_array());
  CHECK(empty["tenures"].size() == 0);
  CHECK(empty["next"] == nullptr);
}

TEST_CASE("revoke as admin ends the tenure and tells the acquiring connection", "[e2e][ops]") {
  // The tests run as the daemon's own uid (or root): an admin principal (§7).
  Daemon d;
  auto holder = d.connect();
  auto admin = d.connect();
  Json a = holder.call(acquire_req("rv", "alice", "\"ttl_ms\":30000"));
  REQUIRE(a["status"] == "acquired");

  Json r = admin.call("\"op\":\"revoke\",\"key\":\"rv\",\"reason\":\"maintenance\"");
  CHECK(r["status"] == "revoked");
  CHECK(r["key"] == "rv");
  CHECK(r["token"] == 1);
  CHECK(r["revision"].u64() > a["revision"].u64());

  Json lost = holder.event(5000ms);
  CHECK(lost["event"] == "lost");
  CHECK(lost["key"] == "rv");
  CHECK(lost["token"] == 1);
  CHECK(lost["reason"] == "revoked");
  CHECK(time_ms(lost["at"]).has_value());
  CHECK(lost["revision"] == r["revision"].u64());
  CHECK(admin.queued_events() == 0);

  Json g = admin.call(get_req("rv"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 1);
  CHECK(holder.call(renew_req("rv", "alice"))["status"] == "not_holder");

  r = admin.call("\"op\":\"revoke\",\"key\":\"rv\"");
  CHECK(r["status"] == "not_holder");
  CHECK(r["reason"] == "free");
  CHECK(r["holder"] == nullptr);
}

TEST_CASE("stats reports version; uptime; revision; counts and ops", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  auto other = d.connect();
  REQUIRE(c.call(acquire_req("s/1", "o", "\"ttl_ms\":30000"))["status"] == "acquired");
  Json last = c.call(acquire_req("s/2", "o", "\"ttl_ms\":30000"));
  REQUIRE(last["status"] == "acquired");
  Json s = c.call("\"op\":\"stats\"");
  CHECK(s["status"] == "ok");
  CHECK(s["version"].is_string());
  CHECK(s["uptime_ms"].is_integer());
  CHECK(s["revision"] == last["revision"].u64());
  CHECK(s["live_leases"] == 2);
  CHECK(s["keys"].is_integer());
  CHECK(s["keys"].u64() >= 2);
  CHECK(s["connections"].is_integer());
  CHECK(s["connections"].u64() >= 2);
  CHECK(s["watchers"] == 0);
  CHECK(s["ops"].is_object());
  std::this_thread::sleep_for(50ms);
  Json s2 = other.call("\"op\":\"stats\"");
  CHECK(s2["uptime_ms"].u64() > s["uptime_ms"].u64());
  CHECK(s2["revision"] == s["revision"].u64());
}

TEST_CASE("ping answers pong", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  Json r = c.call("\"op\":\"ping\"");
  CHECK(r["status"] == "pong");
  CHECK(r["id"] == 1);
}

TEST_CASE("keys and owners at their limits: UTF-8 and '/' are ordinary bytes", "[e2e][ops]") {
  Daemon d;
  auto c = d.connect();
  std::string k512(512, 'k');
  std::string o128(128, 'o');
  Json r = c.call(acquire_req(k512, o128, "\"ttl_ms\":30000"));
  CHECK(r["status"] == "acquired");
  CHECK(r["key"] == k512);
  CHECK(r["owner"] == o128);
  // Multi-byte UTF-8 (ключ/α, 日本) and spaces are fine in keys.
  const std::string k1 = "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87/\xce\xb1";
  const std::string k2 = "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87/\xe6\x97\xa5\xe6\x9c\xac x";
  CHECK(c.call(acquire_req(k1, "u", "\"ttl_ms\":30000"))["status"] == "acquired");
  CHECK(c.call(acquire_req(k2, "u", "\"ttl_ms\":30000"))["status"] == "acquired");
  Json l = c.call("\"op\":\"list\",\"prefix\":" + quote("\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87/"));
  REQUIRE(l["leases"].size() == 2);
  CHECK(l["leases"][0]["key"] == k1);  // 0xCE < 0xE6: byte order
  CHECK(l["leases"][1]["key"] == k2);
  CHECK(c.call(get_req(k2))["lease"]["key"] == k2);
}

TEST_CASE("lock_delay_ms is bounded by --max-lock-delay", "[e2e][ops]") {
  Daemon d({"--max-lock-delay", "1s"});
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("ldm", "a", "\"ttl_ms\":30000,\"lock_delay_ms\":600000"))["status"] ==
          "acquired");
  REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"ldm\"")["status"] == "revoked");
  Json r = c.call(acquire_req("ldm", "b", "\"ttl_ms\":30000"));
  if (r["status"] == "held") {
    CHECK(r["reason"] == "lock_delay");
    CHECK(r["retry_after_ms"].i64() <= 1000);
  }
  Json w = c.call(acquire_req("ldm", "b", "\"ttl_ms\":30000,\"wait_ms\":20000"), 25000ms);
  CHECK(w["status"] == "acquired");
  CHECK(w["token"] == 2);
}

TEST_CASE("history keeps --history-keep records per key but never reissues a token", "[e2e][ops]") {
  Daemon d({"--history-keep", "3"});
  {
    auto c = d.connect();
    for (int i = 1; i <= 5; ++i) {
      Json r = c.call(acquire_req("hk", "o" + std::to_string(i), "\"ttl_ms\":30000"));
      REQUIRE(r["token"] == i);
      REQUIRE(c.call(release_req("hk", "o" + std::to_string(i)))["status"] == "released");
    }
    Json h = c.call(history_req("hk"));
    REQUIRE(h["tenures"].size() >= 3);
    CHECK(h["tenures"][0]["token"] == 5);
    CHECK(h["tenures"][1]["token"] == 4);
    CHECK(h["tenures"][2]["token"] == 3);
    CHECK(h["tenures"].size() <= 3);
    CHECK(c.call(get_req("hk"))["last_token"] == 5);
  }
  // Not after a restart either.
  d.restart_after_crash();
  auto c = d.connect();
  CHECK(c.call(get_req("hk"))["last_token"] == 5);
  Json r = c.call(acquire_req("hk", "o6", "\"ttl_ms\":30000"));
  CHECK(r["status"] == "acquired");
  CHECK(r["token"] == 6);
}
