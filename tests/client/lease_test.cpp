// tenure::Lease: held while it lives, renewed, lost, released on destruction, moved.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <optional>

#include "tests/client/client_common.hpp"

using namespace client_test;
using tenure::client_errc;

namespace {

bool live(tenure::Client& c, const std::string& key, std::uint64_t token) {
  auto info = c.get(key);
  return info && info->lease && info->lease->token == token;
}

}  // namespace

TEST_CASE("a lease is released with its token when destroyed", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  {
    auto lease = c.acquire_lease("pr/1051", {.ttl = 15min, .wait = 30s});
    REQUIRE(lease);
    CHECK(lease->token() == 1);
    CHECK(lease->check());
    CHECK(live(c, "pr/1051", 1));
  }
  auto info = c.get("pr/1051");
  REQUIRE(info);
  CHECK_FALSE(info->lease);
  auto history = c.history("pr/1051");
  REQUIRE(history);
  REQUIRE(history->tenures.size() == 1);
  CHECK(history->tenures[0].end == "released");
}

TEST_CASE("a lease renews itself in the background", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto lease = c.acquire_lease("k", {.ttl = 2s});
  REQUIRE(lease);
  std::this_thread::sleep_for(3500ms);  // well past the ttl: only renewals keep it
  CHECK(live(c, "k", lease->token()));
  CHECK_FALSE(lease->lost());
}

TEST_CASE("a revoked lease reports lost and is never re-acquired", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  std::atomic<bool> called{false};
  auto lease = c.acquire_lease(
      "k", {.ttl = 30s, .on_lost = [&](std::string_view reason) { called = reason == "revoked"; }});
  REQUIRE(lease);
  REQUIRE(c.revoke("k"));
  CHECK(lease->wait_lost(10s));
  CHECK(lease->lost_reason() == "revoked");
  CHECK(eventually([&] { return called.load(); }, 10s));
  auto renewed = lease->renew();
  REQUIRE_FALSE(renewed);
  CHECK(renewed.error().is(client_errc::not_holder));
  auto info = c.get("k");
  REQUIRE(info);
  CHECK_FALSE(info->lease);
}

TEST_CASE("waiting for a lease, and giving up with held", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  REQUIRE(c.acquire("k", {.owner = "other", .ttl = 30s}));
  auto refused = c.acquire_lease("k", {.wait = 100ms});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().is(client_errc::held));
  std::thread releaser([&] {
    std::this_thread::sleep_for(300ms);
    (void)c.release("k", {.owner = "other"});
  });
  auto lease = c.acquire_lease("k", {.ttl = 30s, .wait = 20s});
  releaser.join();
  REQUIRE(lease);
  CHECK(lease->token() == 2);
}

TEST_CASE("two leases without an owner never share a tenure", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto first = c.acquire_lease("k", {.ttl = 30s});
  REQUIRE(first);
  auto second = c.acquire_lease("k");
  REQUIRE_FALSE(second);
  CHECK(second.error().is(client_errc::held));
}

TEST_CASE("moving a lease transfers it; it is released once", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto made = c.acquire_lease("k", {.ttl = 30s});
  REQUIRE(made);
  std::optional<tenure::Lease> kept;
  {
    tenure::Lease moved = std::move(made.value());
    kept.emplace(std::move(moved));
  }  // the moved-from handles release nothing
  CHECK(live(c, "k", 1));
  kept.reset();
  CHECK_FALSE(live(c, "k", 1));
}

TEST_CASE("a lease survives a daemon restart within its deadline", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto lease = c.acquire_lease("pr/7", {.ttl = 30s});
  REQUIRE(lease);
  REQUIRE(d.terminate().exited);
  d.start();
  CHECK(eventually([&] { return bool(lease->renew()); }, 20s));
  CHECK_FALSE(lease->lost());
  CHECK(live(c, "pr/7", 1));
  // Re-attached: the new connection is the one told of loss.
  REQUIRE(c.revoke("pr/7"));
  CHECK(lease->wait_lost(10s));
  CHECK(lease->lost_reason() == "revoked");
}

TEST_CASE("a lease is lost when its deadline passes while the daemon is down", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto lease = c.acquire_lease("pr/8", {.ttl = 1s});
  REQUIRE(lease);
  REQUIRE(d.terminate().exited);
  CHECK(lease->wait_lost(10s));
  CHECK(lease->lost_reason().rfind("unreachable", 0) == 0);
  d.start();
  CHECK_FALSE(live(c, "pr/8", 1));
}

TEST_CASE("a lease whose daemon stalls is lost at its deadline, and then released by nobody",
          "[client]") {
  e2e::TempDir logs;
  std::string audit = logs.path() + "/audit.log";
  e2e::Daemon d({"--audit-log", audit});
  // A renewal that reaches a stalled daemon waits for its reply up to the client's timeout; the
  // lease must not outlast its deadline meanwhile.
  auto c = tenure::Client::connect({.socket = d.socket_path(), .timeout = 120s});
  REQUIRE(c);
  auto acquired = c->acquire_lease("pr/9", {.ttl = 1s});
  REQUIRE(acquired);
  std::optional<tenure::Lease> lease(std::move(acquired.value()));
  REQUIRE(::kill(d.pid(), SIGSTOP) == 0);
  bool lost = lease->wait_lost(30s);
  REQUIRE(::kill(d.pid(), SIGCONT) == 0);
  REQUIRE(lost);
  CHECK(lease->lost_reason().rfind("unreachable", 0) == 0);
  lease.reset();  // sends no release: the tenure is over
  // Answered after anything sent on the key before it, its release included.
  REQUIRE(c->get("pr/9"));
  std::ifstream in(audit);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"op\":\"acquire\"") != std::string::npos);
  CHECK(text.find("\"op\":\"release\"") == std::string::npos);
}

TEST_CASE("a lease dropped in a callback on the client's io thread is released", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto lease = c.acquire_lease("io/k", {.ttl = 30s});
  REQUIRE(lease);
  auto held = std::make_shared<std::optional<tenure::Lease>>(std::move(*lease));
  // Blocking calls are refused there: release() says so and changes nothing.
  std::promise<bool> refused;
  c.async_ping([&, held](auto) { refused.set_value(!(*held)->release() && !(*held)->lost()); });
  CHECK(refused.get_future().get());
  CHECK(live(c, "io/k", 1));
  // The destructor cannot wait there either, and releases without waiting.
  std::promise<void> dropped;
  c.async_ping([&, held](auto) {
    held->reset();
    dropped.set_value();
  });
  dropped.get_future().wait();
  CHECK(eventually([&] { return !live(c, "io/k", 1); }, 10s));
  auto history = c.history("io/k");
  REQUIRE(history);
  REQUIRE(history->tenures.size() == 1);
  CHECK(history->tenures[0].end == "released");
}

TEST_CASE("a released or moved-from lease still answers its accessors", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto lease = c.acquire_lease("acc/k", {.ttl = 30s});
  REQUIRE(lease);
  REQUIRE(lease->release());
  CHECK(lease->token() == 1);
  CHECK(lease->key() == "acc/k");
  CHECK_FALSE(lease->lost());
  CHECK(lease->release());  // idempotent
  auto renewed = lease->renew();
  REQUIRE_FALSE(renewed);
  CHECK(renewed.error().is(client_errc::closed));
  tenure::Lease moved = std::move(*lease);
  CHECK(lease->token() == 0);
  CHECK(lease->key().empty());
  CHECK_FALSE(lease->lost());
  CHECK_FALSE(lease->wait_lost(10ms));
  CHECK(moved.token() == 1);
}
