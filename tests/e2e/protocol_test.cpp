// Framing and request handling (§2, §3): ids, pipelining, oversized lines, bad requests.
#include <sys/socket.h>

#include <cerrno>
#include <map>
#include <set>

#include "tests/e2e/e2e.hpp"

using namespace e2e;

TEST_CASE("request ids: strings and integers echoed verbatim; no id gives a reply without id",
          "[e2e][protocol]") {
  Daemon d;
  auto c = d.connect();

  Json r = c.roundtrip(R"({"id":"req-1","op":"ping"})");
  CHECK(r["status"] == "pong");
  CHECK(r["id"] == "req-1");

  r = c.roundtrip(R"({"id":42,"op":"ping"})");
  CHECK(r["status"] == "pong");
  CHECK(r["id"] == 42);

  r = c.roundtrip(R"({"id":-7,"op":"ping"})");
  CHECK(r["id"] == -7);

  // Above 2^53: must not go through a double.
  r = c.roundtrip(R"({"id":9007199254740993,"op":"ping"})");
  CHECK(r["id"] == 9007199254740993ULL);

  r = c.roundtrip(R"({"id":"q \"x\" \\ \u00e9 \n","op":"ping"})");
  CHECK(r["id"] == "q \"x\" \\ \xc3\xa9 \n");

  r = c.roundtrip(R"({"id":"","op":"ping"})");
  CHECK(r["id"] == "");

  r = c.roundtrip(R"({"op":"ping"})");
  CHECK(r["status"] == "pong");
  CHECK_FALSE(r.has("id"));

  // An optional field given as null counts as absent: that includes id.
  r = c.roundtrip(R"({"id":null,"op":"ping"})");
  CHECK(r["status"] == "pong");
  CHECK_FALSE(r.has("id"));

  // Ids on other ops and on errors too.
  r = c.roundtrip(R"({"id":"g","op":"get","key":"k"})");
  CHECK(r["id"] == "g");
  CHECK(r["status"] == "ok");
  r = c.roundtrip(R"({"id":"e","op":"no-such-op"})");
  CHECK(r["id"] == "e");
  check_error(r, "bad_request", "op");
  r = c.roundtrip(R"({"op":"acquire","key":"k","owner":"o","ttl_ms":30000})");
  CHECK(r["status"] == "acquired");
  CHECK_FALSE(r.has("id"));

  // An id that is neither string nor integer is a mistyped field.
  r = c.roundtrip(R"({"id":1.5,"op":"ping"})");
  check_error(r, "bad_request", "id");
  r = c.roundtrip(R"({"id":{"a":1},"op":"ping"})");
  check_error(r, "bad_request", "id");
  CHECK(c.roundtrip(R"({"id":7,"op":"ping"})")["status"] == "pong");
}

TEST_CASE("pipelining 1000 requests on one connection: every reply matched; per-key order kept",
          "[e2e][protocol]") {
  Daemon d;
  auto c = d.connect();
  constexpr int kKeys = 50;
  constexpr int kRounds = 20;  // 50 x 20 = 1000 requests
  struct Sent {
    int key;
    int round;
  };
  std::map<std::string, Sent> sent;  // id -> what
  std::string blob;
  std::int64_t id = 1000;
  for (int r = 0; r < kRounds; ++r) {
    for (int k = 0; k < kKeys; ++k) {
      std::string key = "pipe/" + std::to_string(k);
      std::string body;
      switch (r % 4) {
        case 0:
          body = acquire_req(key, "piper", "\"ttl_ms\":60000");
          break;
        case 1:
          body = renew_req(key, "piper", "\"ttl_ms\":60000");
          break;
        case 2:
          body = get_req(key);
          break;
        case 3:
          body = release_req(key, "piper");
          break;
      }
      ++id;
      blob += "{\"id\":" + std::to_string(id) + "," + body + "}\n";
      sent[std::to_string(id)] = {k, r};
    }
  }
  REQUIRE(sent.size() == 1000);
  REQUIRE(c.send_bytes(blob));

  std::map<std::string, Json> got;
  for (const auto& [id_text, what] : sent) got.emplace(id_text, c.reply_with_id(id_text, 60000ms));
  CHECK(c.unexpected_lines(200ms).empty());

  int mismatches = 0;
  for (const auto& [id_text, what] : sent) {
    const Json& r = got.at(id_text);
    std::uint64_t token = static_cast<std::uint64_t>(what.round / 4 + 1);
    bool ok = false;
    switch (what.round % 4) {
      case 0:
        ok = r["status"] == "acquired" && r["fresh"] == true && r["token"] == token;
        break;
      case 1:
        ok = r["status"] == "renewed" && r["token"] == token;
        break;
      case 2:
        ok = r["status"] == "ok" && r["lease"]["token"] == token && r["last_token"] == token;
        break;
      case 3:
        ok = r["status"] == "released" && r["token"] == token;
        break;
    }
    if (!ok && ++mismatches <= 5) {
      FAIL_CHECK("round " << what.round << " key pipe/" << what.key << ": unexpected reply "
                          << r.source());
    }
  }
  CHECK(mismatches == 0);

  // Replies on the same key arrived in request order.
  std::map<int, std::int64_t> last_seen;
  int out_of_order = 0;
  for (const auto& id_text : c.arrival_order()) {
    auto it = sent.find(id_text);
    REQUIRE(it != sent.end());
    std::int64_t n = std::stoll(id_text);
    auto& last = last_seen[it->second.key];
    if (n < last) ++out_of_order;
    last = n;
  }
  CHECK(out_of_order == 0);
  CHECK(c.arrival_order().size() == 1000);
  Json g = c.call(get_req("pipe/7"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 5);
}

TEST_CASE("a refused request is answered after the requests read before it", "[e2e][protocol]") {
  // With --sync always every acquire waits for its fsync, while a refusal needs no engine: it
  // would be answered first if it were not held back.
  Daemon d;
  auto c = d.connect();
  std::string blob;
  std::vector<std::string> order;
  for (int i = 0; i < 20; ++i) {
    std::string key = "refused/" + std::to_string(i);
    // An acquire; a field release does not define; a ttl of 0; the release of the acquire.
    const std::string bodies[] = {acquire_req(key, "o", "\"ttl_ms\":60000"),
                                  release_req(key, "o") + ",\"ttl\":1",
                                  renew_req(key, "o", "\"ttl_ms\":0"), release_req(key, "o")};
    for (int k = 0; k < 4; ++k) {
      order.push_back(std::to_string(1000 + 4 * i + k));
      blob += "{\"id\":" + order.back() + "," + bodies[k] + "}\n";
    }
  }
  REQUIRE(c.send_bytes(blob));
  for (std::size_t n = 0; n < order.size(); ++n) {
    Json r = c.reply_with_id(order[n], 30000ms);
    switch (n % 4) {
      case 0:
        CHECK(r["status"] == "acquired");
        break;
      case 3:
        CHECK(r["status"] == "released");
        CHECK(r["token"] == 1);
        break;
      default:
        CHECK(r["error"] == "bad_request");
    }
  }
  // Each key's four replies came in request order.
  std::map<int, int> last_of_key;
  int out_of_order = 0;
  for (const std::string& id : c.arrival_order()) {
    int n = std::stoi(id) - 1000;
    auto [last, fresh] = last_of_key.emplace(n / 4, n);
    if (!fresh && n < last->second) ++out_of_order;
    last->second = n;
  }
  CHECK(out_of_order == 0);
  CHECK(c.arrival_order().size() == order.size());
}

TEST_CASE("a line over 64 KiB gets frame_too_large and the connection is closed",
          "[e2e][protocol]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call("\"op\":\"ping\"")["status"] == "pong");
  std::size_t before = c.lines().size();
  std::string big = R"({"id":99,"op":"ping","pad":")" + std::string(70 * 1024, 'x') + "\"}";

  SECTION("terminated line") { c.send_bytes(big + "\n"); }
  SECTION("no newline at all") { c.send_bytes(big); }

  REQUIRE(c.wait_lines(before + 1, 10000ms));
  Json r = *Json::parse(c.lines()[before]);
  CHECK(r["status"] == "error");
  CHECK(r["error"] == "frame_too_large");
  CHECK(r["message"].is_string());
  CHECK(c.wait_closed(10000ms));

  // The daemon itself is fine.
  auto c2 = d.connect();
  CHECK(c2.call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("a line just under 64 KiB is accepted", "[e2e][protocol]") {
  Daemon d;
  auto c = d.connect();
  std::string line = R"({"id":"big","op":"ping")" + std::string(60 * 1024, ' ') + "}";
  Json r = c.roundtrip(line);
  CHECK(r["status"] == "pong");
  CHECK(r["id"] == "big");
  CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE(
    "malformed; non-object; unknown-op and wrong-typed requests get bad_request naming the "
    "field; and the connection stays usable",
    "[e2e][protocol]") {
  Daemon d;
  auto c = d.connect();
  std::string k513(513, 'k');
  std::string o129(129, 'o');
  struct Case {
    std::string line;
    std::string field;  // must appear in the message ("" = no particular field)
    bool has_id;        // the request's id (7) is readable and must be echoed
  };
  std::vector<Case> cases = {
      {R"({"id":7,"op":"ping")", "", false},
      {R"(this is not json)", "", false},
      {R"([1,2,3])", "", false},
      {R"(42)", "", false},
      {R"("ping")", "", false},
      {R"(null)", "", false},
      {R"({"id":7})", "op", true},
      {R"({"id":7,"op":"frobnicate"})", "op", true},
      {R"({"id":7,"op":42})", "op", true},
      {R"({"id":7,"op":"acquire","owner":"o"})", "key", true},
      {R"({"id":7,"op":"acquire","key":null,"owner":"o"})", "key", true},
      {R"({"id":7,"op":"acquire","key":"k"})", "owner", true},
      {R"({"id":7,"op":"acquire","key":5,"owner":"o"})", "key", true},
      {R"({"id":7,"op":"acquire","key":"","owner":"o"})", "key", true},
      {R"({"id":7,"op":"acquire","key":"a\u0001b","owner":"o"})", "key", true},
      {R"({"id":7,"op":"acquire","key":"a\u007fb","owner":"o"})", "key", true},
      {R"({"id":7,"op":"acquire","key":")" + k513 + R"(","owner":"o"})", "key", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":""})", "owner", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":")" + o129 + R"("})", "owner", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":"caf\u00e9"})", "owner", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":["o"]})", "owner", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":"o","ttl_ms":"100"})", "ttl_ms", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":"o","ttl_ms":1.5})", "ttl_ms", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":"o","ttl_ms":true})", "ttl_ms", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":"o","open_ended":"yes"})", "open_ended", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":"o","wait_ms":"x"})", "wait_ms", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":"o","release_on_disconnect":1})",
       "release_on_disconnect", true},
      {R"({"id":7,"op":"acquire","key":"k","owner":"o","lock_delay_ms":"5"})", "lock_delay_ms",
       true},
      {R"({"id":7,"op":"renew","key":"k","owner":"o","token":"1"})", "token", true},
      {R"({"id":7,"op":"renew","key":"k","owner":"o","token":-1})", "token", true},
      {R"({"id":7,"op":"renew","key":"k"})", "owner", true},
      {R"({"id":7,"op":"release","owner":"o"})", "key", true},
      {R"({"id":7,"op":"release","key":"k","owner":"o","token":{}})", "token", true},
      {R"({"id":7,"op":"check","key":"k"})", "token", true},
      {R"({"id":7,"op":"check","key":"k","token":1,"owner":3})", "owner", true},
      {R"({"id":7,"op":"keepalive"})", "owner", true},
      {R"({"id":7,"op":"keepalive","owner":"o","ttl_ms":"1s"})", "ttl_ms", true},
      {R"({"id":7,"op":"get"})", "key", true},
      {R"({"id":7,"op":"list","limit":"10"})", "limit", true},
      {R"({"id":7,"op":"list","prefix":5})", "prefix", true},
      {R"({"id":7,"op":"list","after":7})", "after", true},
      {R"({"id":7,"op":"history"})", "key", true},
      {R"({"id":7,"op":"history","key":"k","before_token":"x"})", "before_token", true},
      {R"({"id":7,"op":"history","key":"k","limit":false})", "limit", true},
      {R"({"id":7,"op":"revoke"})", "key", true},
      {R"({"id":7,"op":"revoke","key":"k","reason":5})", "reason", true},
      {R"({"id":7,"op":"watch","prefix":1})", "prefix", true},
      {R"({"id":7,"op":"unwatch"})", "watch_id", true},
  };
  for (const auto& tc : cases) {
    Json r = c.roundtrip(tc.line);
    INFO("request: " << tc.line);
    check_error(r, "bad_request", tc.field);
    if (tc.has_id) CHECK(r["id"] == 7);
  }

  // Contradictory fields.
  Json r = c.roundtrip(
      R"({"id":8,"op":"acquire","key":"k","owner":"o","ttl_ms":100,"open_ended":true})");
  check_error(r, "bad_request");
  CHECK((r["message"].str().find("ttl_ms") != std::string::npos ||
         r["message"].str().find("open_ended") != std::string::npos));
  r = c.roundtrip(R"({"id":9,"op":"watch","key":"k","prefix":"k"})");
  check_error(r, "bad_request");
  CHECK((r["message"].str().find("key") != std::string::npos ||
         r["message"].str().find("prefix") != std::string::npos));

  // Still usable, and none of it changed anything.
  CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
  Json g = c.call(get_req("k"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 0);
  Json l = c.call("\"op\":\"list\"");
  CHECK(l["leases"].size() == 0);
  CHECK(c.call("\"op\":\"stats\"")["revision"] == 0);
}

TEST_CASE("optional fields given as null count as absent", "[e2e][protocol]") {
  Daemon d;
  auto c = d.connect();
  Json r = c.call(acquire_req("nul", "o",
                              "\"ttl_ms\":null,\"open_ended\":null,\"wait_ms\":null,"
                              "\"release_on_disconnect\":null,\"lock_delay_ms\":null"));
  CHECK(r["status"] == "acquired");
  CHECK(r["fresh"] == true);
  check_lease_object(r, "nul", "o", 1, 900000);
  r = c.call(renew_req("nul", "o", "\"ttl_ms\":null,\"token\":null"));
  CHECK(r["status"] == "renewed");
  CHECK(r["ttl_ms"] == 900000);
  r = c.call("\"op\":\"check\",\"key\":\"nul\",\"token\":1,\"owner\":null");
  CHECK(r["status"] == "valid");
  r = c.call("\"op\":\"keepalive\",\"owner\":\"o\",\"ttl_ms\":null");
  CHECK(r["status"] == "renewed");
  CHECK(r["count"] == 1);
  r = c.call("\"op\":\"list\",\"prefix\":null,\"limit\":null,\"after\":null");
  CHECK(r["status"] == "ok");
  CHECK(r["leases"].size() == 1);
  r = c.call(history_req("nul", "\"limit\":null,\"before_token\":null"));
  CHECK(r["status"] == "ok");
  CHECK(r["tenures"].size() == 1);
  r = c.call("\"op\":\"revoke\",\"key\":\"none\",\"reason\":null");
  CHECK(r["status"] == "not_holder");
  r = c.call(release_req("nul", "o", "\"token\":null"));
  CHECK(r["status"] == "released");
  CHECK(r["token"] == 1);
}

TEST_CASE("watch with optional fields given as null watches everything", "[e2e][watch]") {
  Daemon d;
  auto c = d.connect();
  Json r = c.call("\"op\":\"watch\",\"key\":null,\"prefix\":null,\"from_revision\":null");
  CHECK(r["status"] == "watching");
  CHECK((r["watch_id"].is_integer() || r["watch_id"].is_string()));
  CHECK(r["revision"] == 0);
  REQUIRE(c.call(acquire_req("w/1", "o", "\"ttl_ms\":30000"))["status"] == "acquired");
  Json e = c.event(5000ms);
  CHECK(e["event"] == "acquired");
  CHECK(e["key"] == "w/1");
  CHECK(e["owner"] == "o");
  CHECK(e["token"] == 1);
  CHECK(e["revision"] == 1);
  CHECK(e["watch_id"].same_as(r["watch_id"]));
}

TEST_CASE("a field the op does not define or a field given twice is bad_request naming it",
          "[e2e][protocol]") {
  Daemon d;
  auto c = d.connect();
  // `ttl` for `ttl_ms` must not become the default 15 minutes.
  Json r = c.call(acquire_req("strict", "o", "\"ttl\":50"));
  check_error(r, "bad_request", "\"ttl\"");
  // `op` twice must not run the second one.
  r = c.roundtrip(R"({"id":"dup","op":"acquire","op":"get","key":"strict","owner":"o"})");
  check_error(r, "bad_request", "\"op\"");
  CHECK(r["id"] == "dup");
  check_error(c.call("\"op\":\"get\",\"key\":\"strict\",\"ttl_ms\":5"), "bad_request", "ttl_ms");
  // Null counts as absent, a field of another op included.
  CHECK(c.call("\"op\":\"get\",\"key\":\"strict\",\"ttl_ms\":null")["status"] == "ok");
  // None of it acquired anything.
  CHECK(c.call(get_req("strict"))["lease"] == nullptr);
}

TEST_CASE("the line limit is set by --max-frame", "[e2e][protocol]") {
  Daemon d({"--max-frame", "1024"});
  auto c = d.connect();
  CHECK(c.roundtrip(R"({"id":1,"op":"ping")" + std::string(900, ' ') + "}")["status"] == "pong");
  Json r = c.roundtrip(R"({"id":2,"op":"ping")" + std::string(2000, ' ') + "}");
  CHECK(r["status"] == "error");
  CHECK(r["error"] == "frame_too_large");
  CHECK(c.wait_closed(10000ms));
}

TEST_CASE("a client that stops reading does not stall other clients", "[e2e][protocol]") {
  Daemon d;
  auto stalled = d.connect();
  // Write requests without ever reading a reply, until the server stops reading us (our writes
  // would block) or 8 MiB are out.
  std::string chunk;
  for (int i = 0; i < 1000; ++i)
    chunk += R"({"op":"get","key":"stall"})"
             "\n";
  std::size_t written = 0;
  int blocked = 0;
  int fd = stalled.fd();
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (written < (8u << 20) && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        std::this_thread::sleep_for(20ms);
        // Blocked for a while: the server has stopped reading us, as it may.
        if (++blocked > 50) break;
        continue;
      }
      break;  // closed by the server: also allowed
    }
    written += static_cast<std::size_t>(n);
  }
  INFO("bytes written by the stalled client: " << written);
  // Everyone else is served as usual.
  auto other = d.connect();
  for (int i = 0; i < 20; ++i) {
    REQUIRE(other.call(acquire_req("free/" + std::to_string(i), "o",
                                   "\"ttl_ms\":30000"))["status"] == "acquired");
  }
  CHECK(d.connect().call("\"op\":\"ping\"")["status"] == "pong");
}
