// Output bounds and a client's fair share (§2): replies are never cut short, a connection that
// does not read stops being read instead of growing the server, waiting acquires do not block a
// connection's renewals, and `lost` notices reach a client that reads, however many at once.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <sstream>

#include "tests/e2e/e2e.hpp"
#include "tests/e2e/ws_client.hpp"

using namespace e2e;

namespace {

// Acquires `count` keys `prefix + i` padded to `key_bytes`, pipelined on c, and waits for every
// reply; the replies carry no id and are taken from c's queue.
std::vector<std::string> fill(LineClient& c, const std::string& prefix, int count,
                              std::size_t key_bytes, const std::string& extra) {
  std::vector<std::string> keys;
  std::string bytes;
  for (int i = 0; i < count; ++i) {
    std::string key = prefix + std::to_string(i);
    key.resize(std::max(key_bytes, key.size()), 'x');
    keys.push_back(key);
    bytes += "{" + acquire_req(key, "filler", extra) + "}\n";
  }
  REQUIRE(c.send_bytes(bytes, 120000ms));
  for (int i = 0; i < count; ++i) REQUIRE(c.anonymous_reply(120000ms)["status"] == "acquired");
  return keys;
}

// The daemon's resident set in KiB, from /proc.
std::size_t rss_kib(pid_t pid) {
  std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) return std::stoul(line.substr(6));
  }
  return 0;
}

}  // namespace

TEST_CASE("four pipelined lists of 10000 leases all arrive whole", "[e2e][backpressure]") {
  Daemon d({"--sync", "none"});
  auto c = d.connect();
  fill(c, "big/", 10000, 200, "\"ttl_ms\":600000");
  std::string bytes;
  for (int i = 0; i < 4; ++i) {
    bytes += R"({"id":"list)" + std::to_string(i) + R"(","op":"list","limit":10000})" + "\n";
  }
  // About 2.5 MB of reply each, over the 4 MiB the server lets a connection owe.
  REQUIRE(c.send_bytes(bytes));
  for (int i = 0; i < 4; ++i) {
    Json r = c.reply_with_id("\"list" + std::to_string(i) + "\"", 60000ms);
    CHECK(r["status"] == "ok");
    CHECK(r["leases"].size() == 10000);
  }
  CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("a WebSocket list of 10000 leases and a ping behind it both arrive",
          "[e2e][backpressure]") {
  Daemon d(web_args({"--sync", "none"}));
  auto c = d.connect();
  fill(c, "ws/big/", 10000, 200, "\"ttl_ms\":600000");
  WsClient ws(d.web_port());
  std::int64_t list = ws.send("\"op\":\"list\",\"limit\":10000");
  std::int64_t list2 = ws.send("\"op\":\"list\",\"limit\":10000");
  std::int64_t ping = ws.send("\"op\":\"ping\"");
  CHECK(ws.reply(list, 60000ms)["leases"].size() == 10000);
  CHECK(ws.reply(list2, 60000ms)["leases"].size() == 10000);
  CHECK(ws.reply(ping, 60000ms)["status"] == "pong");
}

TEST_CASE("a client that sends 512 lists and never reads stops being read; memory stays bounded",
          "[e2e][backpressure]") {
  Daemon d({"--sync", "none"});
  {
    auto c = d.connect();
    fill(c, "mem/", 10000, 512, "\"ttl_ms\":600000");
  }
  std::size_t before = rss_kib(d.pid());
  auto stalled = d.connect();
  std::string bytes;
  for (int i = 0; i < 512; ++i) bytes += "{\"op\":\"list\",\"limit\":10000}\n";
  // 14 KB: it fits the socket's buffers whether or not the server reads.
  REQUIRE(::send(stalled.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(bytes.size()));
  // Each reply is about 6 MB; reading all 512 ahead would take 3 GB.
  std::this_thread::sleep_for(3s);
  std::size_t after = rss_kib(d.pid());
  INFO("RSS before " << before << " KiB, after " << after << " KiB");
  CHECK(after < before + 256 * 1024);
  // Others are served meanwhile.
  CHECK(d.connect().call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("1100 waiting acquires do not keep a connection's renewal from being read",
          "[e2e][backpressure]") {
  Daemon d;
  auto holder = d.connect();
  REQUIRE(holder.call(acquire_req("contended", "holder", "\"ttl_ms\":60000"))["status"] ==
          "acquired");
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("mine", "me", "\"ttl_ms\":60000"))["status"] == "acquired");
  std::string bytes;
  for (int i = 0; i < 1100; ++i) {
    bytes += "{" + acquire_req("contended", "w" + std::to_string(i), "\"wait_ms\":60000") + "}\n";
  }
  REQUIRE(c.send_bytes(bytes));
  // Read and answered behind 1100 waiters.
  CHECK(c.call(renew_req("mine", "me"), 10000ms)["status"] == "renewed");
  CHECK(c.call("\"op\":\"keepalive\",\"owner\":\"me\"", 10000ms)["status"] == "renewed");
  CHECK(c.call(release_req("mine", "me"), 10000ms)["status"] == "released");
  Json g = holder.call(get_req("contended"));
  CHECK(g["waiters"] == 1100);
}

TEST_CASE("waiting acquires past --max-waiters-per-connection get too_many_requests",
          "[e2e][backpressure]") {
  Daemon d({"--max-waiters-per-connection", "3"});
  auto holder = d.connect();
  REQUIRE(holder.call(acquire_req("contended", "holder", "\"ttl_ms\":60000"))["status"] ==
          "acquired");
  auto c = d.connect();
  for (int i = 0; i < 3; ++i)
    c.send(acquire_req("contended", "w" + std::to_string(i), "\"wait_ms\":60000"));
  check_error(c.call(acquire_req("contended", "w3", "\"wait_ms\":60000")), "too_many_requests");
  // Without wait_ms it is a quick request and is answered.
  CHECK(c.call(acquire_req("contended", "w4"))["status"] == "held");
}

TEST_CASE("a burst of 20000 lost notices reaches a client that reads, all of them",
          "[e2e][backpressure]") {
  Daemon d({"--sync", "none"});
  auto c = d.connect();
  constexpr int kLeases = 20000;
  // About 9 MB of `lost` at once, twice what a connection may owe in replies.
  fill(c, "burst/", kLeases, 300, "\"ttl_ms\":2000");
  // The client is busy a moment while they expire; then it reads on.
  std::this_thread::sleep_for(3s);
  std::size_t lost = 0;
  while (lost < kLeases) {
    auto e = c.next_event(20000ms);
    if (!e) break;
    if ((*e)["event"] == "lost") ++lost;
  }
  CHECK(lost == kLeases);
  CHECK_FALSE(c.peer_closed());
  CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("a client that takes nothing for --write-timeout is told so, then closed",
          "[e2e][backpressure]") {
  Daemon d({"--sync", "none", "--write-timeout", "2s"});
  auto c = d.connect();
  constexpr int kLeases = 20000;
  // They expire after the filling is done, all at once.
  fill(c, "unread/", kLeases, 300, "\"ttl_ms\":5000");
  // Not reading: the notices fill the socket's buffers and the server's output stalls.
  REQUIRE(
      wait_until([&] { return d.log().find("no output taken") != std::string::npos; }, 30000ms));
  // Reading again within the next write timeout: the notices written, the notice, the end.
  REQUIRE(c.wait_closed(30000ms));
  std::size_t lost = 0;
  std::optional<Json> closing;
  while (auto e = c.next_event(0ms)) {
    if ((*e)["event"] == "lost") ++lost;
    if ((*e)["event"] == "closing") closing = *e;
  }
  REQUIRE(closing);
  CHECK((*closing)["reason"] == "unread");
  INFO("lost notices read: " << lost);
  // Notices of leases that expire after the close are not counted: the client knows that its
  // connection, and with it every notice, ended.
  CHECK((*closing)["undelivered"].u64() > 0);
  CHECK(lost + (*closing)["undelivered"].u64() <= kLeases);
  CHECK(d.connect().call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("watches past --max-watches-per-connection or --max-watches get too_many_requests",
          "[e2e][backpressure]") {
  Daemon d({"--max-watches-per-connection", "3", "--max-watches", "5"});
  auto a = d.connect();
  std::vector<Json> watches;
  for (int i = 0; i < 3; ++i) {
    watches.push_back(a.call("\"op\":\"watch\",\"prefix\":\"\""));
    REQUIRE(watches.back()["status"] == "watching");
  }
  check_error(a.call("\"op\":\"watch\",\"prefix\":\"\""), "too_many_requests", "3");
  auto b = d.connect();
  REQUIRE(b.call("\"op\":\"watch\",\"key\":\"k\"")["status"] == "watching");
  REQUIRE(b.call("\"op\":\"watch\",\"prefix\":\"p/\"")["status"] == "watching");
  check_error(b.call("\"op\":\"watch\",\"prefix\":\"\""), "too_many_requests", "5");
  // An unwatch frees a place, and so does a closed connection.
  REQUIRE(a.call("\"op\":\"unwatch\",\"watch_id\":" + watches[0]["watch_id"].dump())["status"] ==
          "unwatched");
  CHECK(b.call("\"op\":\"watch\",\"prefix\":\"\"")["status"] == "watching");
  a.close();
  auto c = d.connect();
  CHECK(wait_until(
      [&] { return c.call("\"op\":\"watch\",\"prefix\":\"x\"")["status"] == "watching"; },
      10000ms));
  // Every watch still gets its events.
  REQUIRE(b.call(acquire_req("k", "o", "\"ttl_ms\":30000"))["status"] == "acquired");
  std::size_t acquired = 0;
  while (auto e = b.next_event(2000ms)) {
    if ((*e)["event"] == "acquired") ++acquired;
  }
  CHECK(acquired == 2);  // the key watch and the prefix "" watch
}

TEST_CASE("a daemon stopped and continued under load delays replies, loses none",
          "[e2e][backpressure]") {
  Daemon d;
  std::vector<LineClient> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(d.connect());
  std::vector<std::vector<std::int64_t>> ids(clients.size());
  auto send_batch = [&](int round) {
    for (std::size_t c = 0; c < clients.size(); ++c) {
      for (int k = 0; k < 20; ++k) {
        std::string key = "stop/" + std::to_string(c) + "/" + std::to_string(round * 20 + k);
        ids[c].push_back(
            clients[c].send(acquire_req(key, "o" + std::to_string(c), "\"ttl_ms\":120000")));
      }
    }
  };
  send_batch(0);
  REQUIRE(::kill(d.pid(), SIGSTOP) == 0);
  send_batch(1);  // into the socket buffers of a stopped daemon
  std::this_thread::sleep_for(2s);
  send_batch(2);
  REQUIRE(::kill(d.pid(), SIGCONT) == 0);
  send_batch(3);
  for (std::size_t c = 0; c < clients.size(); ++c) {
    for (std::int64_t id : ids[c]) {
      Json r = clients[c].reply(id, 30000ms);
      INFO("connection " << c << ", request " << id);
      CHECK(r["status"] == "acquired");
    }
    CHECK_FALSE(clients[c].peer_closed());
  }
  // Every acknowledged lease is held.
  Json l = d.connect().call("\"op\":\"list\",\"prefix\":\"stop/\",\"limit\":10000");
  CHECK(l["leases"].size() == clients.size() * 80);
}

TEST_CASE("a WebSocket client that takes nothing for --write-timeout is closed; one reading is not",
          "[e2e][backpressure]") {
  // 10 s, not less: under ThreadSanitizer on a slow machine the filler's own 20 MB of requests
  // took longer than 2 s to send, and a connection that sends without reading is closed too.
  Daemon d(web_args({"--sync", "none", "--write-timeout", "10s"}));
  WsClient stalled(d.web_port());
  WsClient reading(d.web_port());
  for (WsClient* w : {&stalled, &reading}) {
    REQUIRE(w->call("\"op\":\"watch\",\"prefix\":\"\"")["status"] == "watching");
  }
  // 40,000 events of 512-byte keys for each watcher (over 25 MB), more than the sockets'
  // buffers hold, acquired on a thread of their own while this one reads the reading watcher's.
  std::atomic<int> acquired{0};
  std::atomic<bool> filled{false};
  std::thread filler([&] {
    auto c = d.connect();
    std::string bytes;
    for (int i = 0; i < 40000; ++i) {
      std::string key = "wsunread/" + std::to_string(i);
      key.resize(512, 'x');
      bytes += "{" + acquire_req(key, "filler", "\"ttl_ms\":600000") + "}\n";
    }
    if (!c.send_bytes(bytes, 120000ms)) return;
    for (int i = 0; i < 40000; ++i) {
      if (c.anonymous_reply(120000ms)["status"] == "acquired") ++acquired;
    }
    filled = true;
  });
  auto closed_one = [&] {
    return d.log().find("(WebSocket): closing, no output taken") != std::string::npos;
  };
  // The reading watcher reads until the filler is done, not only until the other is closed: on
  // a slow machine the rest of the fill outlasts --write-timeout.
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while ((!closed_one() || !filled) && std::chrono::steady_clock::now() < deadline) {
    reading.next_event(20ms);
  }
  filler.join();
  CHECK(acquired == 40000);
  REQUIRE(closed_one());
  // The one closed is the one that did not read.
  CHECK_FALSE(reading.closed());
  CHECK(reading.call("\"op\":\"ping\"", 60000ms)["status"] == "pong");
  CHECK(stalled.wait_closed(30000ms));
}
