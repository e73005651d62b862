// tenure::Client: every op as a typed call against a real tenured; errors as values.
#include <fcntl.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <vector>

#include "tests/client/client_common.hpp"

using namespace client_test;
using tenure::client_errc;

TEST_CASE("every op is a typed call", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  CHECK(c.ping());
  auto a = c.acquire("pr/1", {.ttl = 30s});
  REQUIRE(a);
  CHECK(a->token == 1);
  CHECK(a->owner == c.owner());
  CHECK(a->ttl_ms == 30000);
  CHECK(a->fresh);

  auto held = c.acquire("pr/1", {.owner = "bob"});
  REQUIRE_FALSE(held);
  CHECK(held.error().is(client_errc::held));
  CHECK(held.error().holder == c.owner());
  CHECK(held.error().code == client_errc::held);

  auto renewed = c.renew("pr/1", {.ttl = 60s, .token = 1});
  REQUIRE(renewed);
  CHECK(renewed->ttl_ms == 60000);
  auto not_holder = c.renew("pr/1", {.owner = "bob"});
  REQUIRE_FALSE(not_holder);
  CHECK(not_holder.error().reason == "held_by_other");

  CHECK(c.check("pr/1", 1));
  auto stale = c.check("pr/1", 0);
  REQUIRE_FALSE(stale);
  CHECK(stale.error().reason == "token_mismatch");

  REQUIRE(c.acquire("pr/2", {.ttl = 30s}));
  auto page = c.list({.prefix = "pr/", .limit = 1});
  REQUIRE(page);
  REQUIRE(page->leases.size() == 1);
  CHECK(page->next == "pr/1");
  auto keepalive = c.keepalive(45s);
  REQUIRE(keepalive);
  CHECK(keepalive->count == 2);

  auto released = c.release("pr/1", {.token = 1});
  REQUIRE(released);
  CHECK(released->token == 1u);
  auto again = c.release("pr/1");
  REQUIRE(again);
  CHECK_FALSE(again->token);

  auto revoked = c.revoke("pr/2", "maintenance");
  REQUIRE(revoked);
  CHECK(revoked->token == 1);
  auto history = c.history("pr/1");
  REQUIRE(history);
  REQUIRE(history->tenures.size() == 1);
  CHECK(history->tenures[0].end == "released");
  auto info = c.get("pr/1");
  REQUIRE(info);
  CHECK_FALSE(info->lease);
  CHECK(info->last_token == 1);
  auto stats = c.stats();
  REQUIRE(stats);
  CHECK(stats->connections >= 1);
  CHECK(stats->ops.at("acquire") >= 3);

  auto bad = c.acquire("");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().is(client_errc::bad_request));
  CHECK(bad.error().message.find("key") != std::string::npos);
  CHECK(c.ping());  // the connection stays usable
}

TEST_CASE("connect failures name the problem", "[client]") {
  e2e::TempDir dir;
  std::string path = dir.path() + "/none.sock";
  auto c = tenure::Client::connect({.socket = path});
  REQUIRE_FALSE(c);
  CHECK(c.error().is(client_errc::cannot_connect));
  CHECK(c.error().message == "cannot connect to " + path + ": no such file; is tenured running?");
}

TEST_CASE("calls from many threads are pipelined on one connection", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string key = "k/" + std::to_string(t) + "/" + std::to_string(i);
        if (c.acquire(key, {.ttl = 30s}) && c.release(key)) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 400);
  auto stats = c.stats();
  REQUIRE(stats);
  CHECK(stats->connections == 1);
}

TEST_CASE("a call reconnects after the daemon restarted", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  REQUIRE(c.acquire("k", {.ttl = 60s}));
  REQUIRE(d.terminate().exited);
  auto down = c.ping();
  REQUIRE_FALSE(down);
  CHECK(
      (down.error().is(client_errc::disconnected) || down.error().is(client_errc::cannot_connect)));
  d.start();
  REQUIRE(c.ping());
  auto info = c.get("k");
  REQUIRE(info);
  REQUIRE(info->lease);
  CHECK(info->lease->token == 1);
}

TEST_CASE("a client over WebSocket with and without the bearer token", "[client]") {
  e2e::Daemon d(e2e::web_args());
  std::string url = "ws://127.0.0.1:" + std::to_string(d.web_port()) + "/v1/ws";
  auto c = tenure::Client::connect({.url = url, .token = d.ws_token()});
  INFO((c ? "" : c.error().message));
  REQUIRE(c);
  CHECK(c->address() == url);
  auto lease = c->acquire_lease("ws/1", {.ttl = 30s});
  REQUIRE(lease);
  CHECK(lease->token() == 1);

  auto anonymous = tenure::Client::connect({.url = url});
  REQUIRE(anonymous);
  auto info = anonymous->get("ws/1");
  REQUIRE(info);
  REQUIRE(info->lease);
  CHECK(info->lease->token == 1);
  auto refused = anonymous->acquire("ws/2");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().is(client_errc::unauthenticated));

  auto nobody = tenure::Client::connect({.url = "ws://127.0.0.1:1/v1/ws"});
  REQUIRE_FALSE(nobody);
  CHECK(nobody.error().message.find("connection refused; is tenured running?") !=
        std::string::npos);
}

// The descriptors open now, each with whether it is close-on-exec.
std::map<int, bool> open_descriptors() {
  std::map<int, bool> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    int fd = std::stoi(entry.path().filename().string());
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) out[fd] = (flags & FD_CLOEXEC) != 0;
  }
  return out;
}

TEST_CASE("a program the caller starts inherits no connection, socket or WebSocket", "[client]") {
  e2e::Daemon d(e2e::web_args());
  std::string url = "ws://127.0.0.1:" + std::to_string(d.web_port()) + "/v1/ws";
  for (const auto& options : {tenure::client::ClientOptions{.socket = d.socket_path()},
                              tenure::client::ClientOptions{.url = url}}) {
    auto before = open_descriptors();
    auto c = tenure::Client::connect(options);
    REQUIRE(c);
    REQUIRE(c->ping());
    int opened = 0;
    for (auto [fd, cloexec] : open_descriptors()) {
      if (before.contains(fd)) continue;
      ++opened;
      std::error_code ec;  // the listing's own descriptor is gone already
      INFO(
          c->address() << ": descriptor " << fd << " -> "
                       << std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec));
      CHECK(cloexec);
    }
    CHECK(opened > 0);
  }
}
