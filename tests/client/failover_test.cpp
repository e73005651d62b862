// A client given several endpoints (the nodes of a cluster): it connects to the first that
// accepts, and moves on to the next when its connection breaks or its daemon stops answering;
// leases keep renewing through whichever endpoint answers.
#include <signal.h>
#include <unistd.h>

#include "tests/client/client_common.hpp"

namespace client_test {
namespace {

using tenure::protocol::client_errc;

// Whether the process is stopped (SIGSTOP takes effect a moment after kill() returns).
bool stopped(pid_t pid) {
  std::string stat = e2e::read_file("/proc/" + std::to_string(pid) + "/stat");
  auto end = stat.rfind(')');
  return end != std::string::npos && stat.compare(end + 2, 1, "T") == 0;
}

TEST_CASE("a client with several endpoints connects to the first that accepts", "[client]") {
  e2e::Daemon d;
  e2e::TempDir dir;
  std::string dead = dir.path() + "/none.sock";
  auto c = tenure::Client::connect({.endpoints = {dead, d.socket_path()}});
  REQUIRE(c);
  CHECK(c->address() == d.socket_path());
  CHECK(c->ping());

  auto none = tenure::Client::connect({.endpoints = {dead, dir.path() + "/other.sock"}});
  REQUIRE_FALSE(none);
  CHECK(none.error().is(client_errc::cannot_connect));
  CHECK(none.error().message.find(dead) != std::string::npos);
  CHECK(none.error().message.find("other.sock") != std::string::npos);

  auto both = tenure::Client::connect({.socket = dead, .endpoints = {dead}});
  REQUIRE_FALSE(both);
  CHECK(both.error().is(client_errc::invalid_argument));
}

TEST_CASE("a client moves on to the next endpoint when its daemon dies", "[client]") {
  e2e::Daemon first, second;
  auto c = tenure::Client::connect({.endpoints = {first.socket_path(), second.socket_path()}});
  REQUIRE(c);
  REQUIRE(c->acquire("k", {.ttl = 60s}));
  first.kill9();
  CHECK(eventually([&] { return bool(c->ping()); }, 5s));
  CHECK(c->address() == second.socket_path());
  auto info = c->get("k");  // the second daemon's ledger: it never saw k
  REQUIRE(info);
  CHECK_FALSE(info->lease);
}

TEST_CASE("a client leaves a daemon that stops answering for the next endpoint", "[client]") {
  e2e::Daemon first, second;
  auto c = tenure::Client::connect(
      {.endpoints = {first.socket_path(), second.socket_path()}, .timeout = 500ms});
  REQUIRE(c);
  ::kill(first.pid(), SIGSTOP);
  REQUIRE(eventually([&] { return stopped(first.pid()); }, 5s));
  auto stalled = c->ping();
  ::kill(first.pid(), SIGCONT);
  REQUIRE_FALSE(stalled);
  CHECK(stalled.error().is(client_errc::timeout));
  CHECK(c->ping());
  CHECK(c->address() == second.socket_path());
}

TEST_CASE("a watch that a stalled daemon leaves unanswered starts on the next endpoint",
          "[client]") {
  e2e::Daemon first, second;
  auto on_second = connect(second);
  REQUIRE(on_second.acquire("w/1", {.ttl = 60s}));
  const tenure::ClientOptions options{.endpoints = {first.socket_path(), second.socket_path()},
                                      .timeout = 500ms};
  auto c = tenure::Client::connect(options);
  auto c2 = tenure::Client::connect(options);
  REQUIRE(c);
  REQUIRE(c2);
  ::kill(first.pid(), SIGSTOP);
  REQUIRE(eventually([&] { return stopped(first.pid()); }, 5s));
  // From the revision asked for, and live (from the next endpoint's revision).
  auto replayed = c->watch({.prefix = "w/", .from_revision = 1, .resume_for = 2s});
  auto live = c2->watch({.key = "w/2", .resume_for = 2s});
  ::kill(first.pid(), SIGCONT);
  INFO((replayed ? "" : replayed.error().message) << (live ? "" : live.error().message));
  REQUIRE(replayed);
  REQUIRE(live);
  CHECK(c->address() == second.socket_path());
  CHECK(c2->address() == second.socket_path());
  auto e = replayed->next(5s);
  REQUIRE(e);
  CHECK(e->key == "w/1");
  CHECK(e->revision == 1);
  CHECK(live->watching().revision == 1);
  REQUIRE(on_second.acquire("w/2", {.ttl = 60s}));
  auto later = live->next(5s);
  REQUIRE(later);
  CHECK(later->key == "w/2");
  CHECK(later->revision == 2);

  // Given up after resume_for with no endpoint answering: an end, not next()'s own timeout.
  ::kill(first.pid(), SIGSTOP);
  REQUIRE(eventually([&] { return stopped(first.pid()); }, 5s));
  second.kill9();
  auto end = live->next(10s);
  ::kill(first.pid(), SIGCONT);
  REQUIRE_FALSE(end);
  CHECK(end.error().is(client_errc::disconnected));
  CHECK(end.error().message.find("no reply from tenured at " + first.socket_path()) !=
        std::string::npos);
}

TEST_CASE("a lease renews through the next endpoint", "[client]") {
  // Two paths to one daemon (symlinks); the first is gone when it comes back: the lease
  // outlives the connection it was taken on, renewed through the other path.
  e2e::Daemon d;
  std::string first = d.root() + "/first.sock", other = d.root() + "/other.sock";
  REQUIRE(::symlink(d.socket_path().c_str(), first.c_str()) == 0);
  REQUIRE(::symlink(d.socket_path().c_str(), other.c_str()) == 0);
  auto c = tenure::Client::connect({.endpoints = {first, other}});
  REQUIRE(c);
  auto lease = c->acquire_lease("pr/9", {.ttl = 3s});
  REQUIRE(lease);
  REQUIRE(::unlink(first.c_str()) == 0);
  d.restart_after_crash();
  CHECK(eventually([&] { return bool(lease->renew()); }, 2s));
  CHECK_FALSE(lease->lost());
  CHECK(c->address() == other);
  // Re-attached on the new connection: it is told of loss.
  REQUIRE(c->revoke("pr/9"));
  CHECK(lease->wait_lost(5s));
  CHECK(lease->lost_reason() == "revoked");
}

}  // namespace
}  // namespace client_test
