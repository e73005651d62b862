// tenure::Watch: typed events, replay, resume across a daemon restart.
#include "tests/client/client_common.hpp"

using namespace client_test;
using tenure::client_errc;

TEST_CASE("a watch streams typed events in revision order", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto w = c.watch({.prefix = "pr/"});
  REQUIRE(w);
  auto a = c.acquire("pr/1", {.ttl = 30s});
  REQUIRE(a);
  REQUIRE(c.acquire("other", {.ttl = 30s}));
  REQUIRE(c.release("pr/1"));
  auto first = w->next(10s);
  REQUIRE(first);
  CHECK(first->type == "acquired");
  CHECK(first->revision == a->revision);
  auto second = w->next(10s);
  REQUIRE(second);
  CHECK(second->type == "released");
  CHECK(second->key == "pr/1");
  auto none = w->next(100ms);
  REQUIRE_FALSE(none);
  CHECK(none.error().is(client_errc::timeout));
  w->close();
  auto closed = w->next(10s);
  REQUIRE_FALSE(closed);
  CHECK(closed.error().is(client_errc::closed));
}

TEST_CASE("a watch replays from a revision", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto a = c.acquire("k", {.ttl = 30s});
  REQUIRE(a);
  REQUIRE(c.release("k"));
  auto w = c.watch({.key = "k", .from_revision = a->revision});
  REQUIRE(w);
  auto first = w->next(10s);
  auto second = w->next(10s);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->type == "acquired");
  CHECK(second->type == "released");
  CHECK(w->next_revision() == second->revision + 1);
}

TEST_CASE("a watch resumes across a daemon restart without gap or repeat", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto w = c.watch({.prefix = "pr/"});
  REQUIRE(w);
  REQUIRE(c.acquire("pr/1", {.ttl = 30s}));
  auto first = w->next(10s);
  REQUIRE(first);
  REQUIRE(d.terminate().exited);
  d.start();
  auto other = connect(d);
  for (const char* key : {"pr/2", "pr/3", "pr/4"}) REQUIRE(other.acquire(key, {.ttl = 30s}));
  for (const char* key : {"pr/2", "pr/3", "pr/4"}) {
    auto e = w->next(20s);
    REQUIRE(e);
    CHECK(e->key == key);
    CHECK(e->type == "acquired");
  }
  auto none = w->next(200ms);
  CHECK_FALSE(none);
}

TEST_CASE("a watch resuming from a compacted revision ends with compacted", "[client]") {
  e2e::Daemon d({"--events-keep", "1", "--sync", "none"});
  auto c = connect(d);
  for (int i = 0; i < 2100; ++i) {  // past one trimming step (4096 events)
    REQUIRE(c.acquire("k", {.ttl = 30s}));
    REQUIRE(c.release("k"));
  }
  auto w = c.watch({.from_revision = 1});
  REQUIRE(w);
  auto e = w->next(10s);
  REQUIRE_FALSE(e);
  CHECK(e.error().is(client_errc::compacted));
  CHECK(e.error().message.find("from revision 1:") != std::string::npos);
  auto again = w->next(10ms);
  REQUIRE_FALSE(again);
  CHECK(again.error().is(client_errc::compacted));  // it stays ended
}

TEST_CASE("a watch refused for too many watches is refused at once", "[client]") {
  e2e::Daemon d({"--max-watches-per-connection", "1"});
  auto c = connect(d);  // its timeout: 10 s
  auto first = c.watch({.prefix = "a/"});
  REQUIRE(first);
  auto since = std::chrono::steady_clock::now();
  auto second = c.watch({.prefix = "b/"});
  REQUIRE_FALSE(second);
  CHECK(second.error().is(client_errc::too_many_requests));
  CHECK(std::chrono::steady_clock::now() - since < 5s);  // not tried again until the timeout
}

TEST_CASE("a watch gives up resuming after resume_for without an endpoint", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto w = c.watch({.prefix = "pr/", .resume_for = 300ms});
  REQUIRE(w);
  REQUIRE(c.acquire("pr/1", {.ttl = 30s}));
  REQUIRE(w->next(10s));
  REQUIRE(d.terminate().exited);
  auto e = w->next(10s);
  REQUIRE_FALSE(e);
  CHECK(e.error().is(client_errc::cannot_connect));
  CHECK(w->next_revision() == 2);
}
