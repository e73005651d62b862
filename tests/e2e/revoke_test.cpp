// Who revoked a tenure and why (§3 revoke, §5): kept in its history record, carried by the
// `revoked` event to watchers on both transports and by the `lost` notice, and kept across a
// restart, in the record and in the events a watch replays.
#include <unistd.h>

#include <algorithm>

#include "tests/e2e/e2e.hpp"
#include "tests/e2e/ws_client.hpp"

using namespace e2e;

namespace {

std::string uid_principal() { return "uid:" + std::to_string(::geteuid()); }

Json newest_tenure(LineClient& c, const std::string& key) {
  Json h = c.call(history_req(key, "\"limit\":1"));
  REQUIRE(h["status"] == "ok");
  REQUIRE(h["tenures"].size() == 1);
  return h["tenures"][0];
}

}  // namespace

TEST_CASE("revoke records who revoked and why, in history, events and the lost notice",
          "[e2e][ops]") {
  Daemon d(web_args());
  auto holder = d.connect();
  auto admin = d.connect();
  auto watcher = d.connect();
  WsClient ws_watcher(d.web_port());
  REQUIRE(watcher.call("\"op\":\"watch\",\"prefix\":\"rv/\"")["status"] == "watching");
  REQUIRE(ws_watcher.call("\"op\":\"watch\",\"prefix\":\"rv/\"")["status"] == "watching");
  REQUIRE(holder.call(acquire_req("rv/a", "alice", "\"ttl_ms\":600000"))["status"] == "acquired");

  Json r = admin.call("\"op\":\"revoke\",\"key\":\"rv/a\",\"reason\":\"stuck deploy\"");
  REQUIRE(r["status"] == "revoked");

  Json t = newest_tenure(admin, "rv/a");
  CHECK(t["end"] == "revoked");
  CHECK(t["revoked_by"] == uid_principal());
  CHECK(t["reason"] == "stuck deploy");

  for (int i = 0; i < 2; ++i) {
    Json e = i == 0 ? watcher.event() : ws_watcher.event();
    if (e["event"] == "acquired") e = i == 0 ? watcher.event() : ws_watcher.event();
    INFO("event: " << e.source());
    CHECK(e["event"] == "revoked");
    CHECK(e["revision"].same_as(r["revision"]));
    CHECK(e["by"] == uid_principal());
    CHECK(e["reason"] == "stuck deploy");
  }
  Json lost = holder.event();
  CHECK(lost["event"] == "lost");
  CHECK(lost["reason"] == "revoked");
  CHECK(lost["by"] == uid_principal());
  CHECK(lost["revoke_reason"] == "stuck deploy");

  // Over WebSocket the bearer token is the principal; a revoke may give no reason.
  REQUIRE(holder.call(acquire_req("rv/b", "bob", "\"ttl_ms\":600000"))["status"] == "acquired");
  WsClient ws_admin(d.web_port(), WsOptions().bearer(d.ws_token()));
  REQUIRE(ws_admin.call("\"op\":\"revoke\",\"key\":\"rv/b\"")["status"] == "revoked");
  Json tb = newest_tenure(admin, "rv/b");
  CHECK(tb["revoked_by"] == "ws");
  CHECK(tb["reason"] == nullptr);
  // Records that did not end by revoke say nothing of revokers.
  REQUIRE(holder.call(acquire_req("rv/c", "carol"))["status"] == "acquired");
  REQUIRE(holder.call(release_req("rv/c", "carol"))["status"] == "released");
  CHECK_FALSE(newest_tenure(admin, "rv/c").has("revoked_by"));

  // Durable: the record and the replayed event say the same after a restart.
  d.terminate();
  d.start();
  auto c = d.connect();
  Json again = newest_tenure(c, "rv/a");
  CHECK(again["revoked_by"] == uid_principal());
  CHECK(again["reason"] == "stuck deploy");
  REQUIRE(c.call("\"op\":\"watch\",\"key\":\"rv/a\",\"from_revision\":" +
                 r["revision"].dump())["status"] == "watching");
  Json replayed = c.event();
  CHECK(replayed["event"] == "revoked");
  CHECK(replayed["by"] == uid_principal());
  CHECK(replayed["reason"] == "stuck deploy");
}

TEST_CASE("the holder learns of a revoke before a reply that follows from it", "[e2e][ops]") {
  Daemon d;
  auto holder = d.connect();
  REQUIRE(holder.call(acquire_req("rv/o", "alice", "\"ttl_ms\":600000"))["status"] == "acquired");
  // In one write: the revoke (the test's uid is an admin) and a renew the revoke answers.
  holder.send_line(R"({"id":1,"op":"revoke","key":"rv/o"})"
                   "\n"
                   R"({"id":2,"op":"renew","key":"rv/o","owner":"alice"})");
  REQUIRE(holder.wait_lines(4, 10000ms));  // with the acquire's reply
  std::vector<std::string> order;
  for (const std::string& line : holder.lines()) {
    auto j = Json::parse(line);
    REQUIRE(j);
    order.push_back((*j)["event"].is_string() ? (*j)["event"].str() : (*j)["id"].dump());
  }
  INFO(holder.describe());
  // The notice comes before the renew's not_holder (the revoke's own reply may come first).
  auto lost = std::find(order.begin(), order.end(), "lost");
  auto renew = std::find(order.begin(), order.end(), "2");
  REQUIRE(lost != order.end());
  REQUIRE(renew != order.end());
  CHECK(lost < renew);
}
