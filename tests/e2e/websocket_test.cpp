// The same protocol over WebSocket (§2, §3), its credentials and origins (§7), and the HTTP face
// of the listener (§7a): a real tenured with its listener on a free loopback port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "tests/e2e/e2e.hpp"
#include "tests/e2e/prometheus.hpp"
#include "tests/e2e/ws_client.hpp"

using namespace e2e;

namespace {

const std::string kUnauthenticated = "unauthenticated";

// Every read-only op of §3 answers as on the socket, whoever asks.
void check_reads(WsClient& c, const std::string& key) {
  Json g = c.call(get_req(key));
  CHECK(g["status"] == "ok");
  CHECK(g["key"] == key);
  CHECK(c.call("\"op\":\"list\"")["status"] == "ok");
  CHECK(c.call(history_req(key))["status"] == "ok");
  Json check = c.call("\"op\":\"check\",\"key\":" + quote(key) + ",\"token\":1");
  CHECK((check["status"] == "valid" || check["status"] == "not_holder"));
  Json stats = c.call("\"op\":\"stats\"");
  CHECK(stats["status"] == "ok");
  CHECK(stats["connections"].u64() >= 1);
  CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
  Json w = c.call("\"op\":\"watch\",\"key\":" + quote(key));
  REQUIRE(w["status"] == "watching");
  Json u = c.call("\"op\":\"unwatch\",\"watch_id\":" + w["watch_id"].dump());
  CHECK(u["status"] == "unwatched");
  CHECK(u["watch_id"].same_as(w["watch_id"]));
}

// A raw TCP connection to the listener, for bytes no well-behaved client sends.
int connect_raw(unsigned short port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

void send_raw(int fd, const std::string& bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(bytes.size()));
}

// Reads up to the end of a response's header.
std::string read_head(int fd) {
  std::string response;
  char buffer[4096];
  while (response.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    REQUIRE(n > 0);
    response.append(buffer, static_cast<std::size_t>(n));
  }
  return response;
}

// Reads until the server ends the connection; what recv last returned (0, or -1 with errno).
ssize_t read_to_end(int fd) {
  char buffer[4096];
  ssize_t n = 0;
  do {
    n = ::recv(fd, buffer, sizeof buffer, 0);
  } while (n > 0);
  return n;
}

}  // namespace

TEST_CASE("every op works over WebSocket with the bearer token", "[e2e][websocket]") {
  Daemon d(web_args());
  WsClient c(d.web_port(), WsOptions().bearer(d.ws_token()));
  Json r = c.call(acquire_req("ws/a", "alice", "\"ttl_ms\":30000"));
  REQUIRE(r["status"] == "acquired");
  check_lease_object(r, "ws/a", "alice", 1, 30000);
  CHECK(c.call(renew_req("ws/a", "alice", "\"ttl_ms\":60000"))["ttl_ms"] == 60000);
  Json k = c.call("\"op\":\"keepalive\",\"owner\":\"alice\"");
  CHECK(k["status"] == "renewed");
  CHECK(k["count"] == 1);
  CHECK(c.call("\"op\":\"check\",\"key\":\"ws/a\",\"token\":1")["status"] == "valid");
  check_reads(c, "ws/a");
  CHECK(c.call(release_req("ws/a", "alice"))["status"] == "released");
  REQUIRE(c.call(acquire_req("ws/a", "bob"))["token"] == 2);
  // The bearer is the server's own principal, so an admin.
  Json v = c.call("\"op\":\"revoke\",\"key\":\"ws/a\"");
  CHECK(v["status"] == "revoked");
  CHECK(v["token"] == 2);
  // The socket sees the same engine.
  auto unix_client = d.connect();
  CHECK(unix_client.call(get_req("ws/a"))["last_token"] == 2);
}

TEST_CASE("mutations over WebSocket without the token are unauthenticated", "[e2e][websocket]") {
  Daemon d(web_args());
  auto admin = d.connect();
  REQUIRE(admin.call(acquire_req("ro/a", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");
  SECTION("no token") {
    WsClient c(d.web_port());
    for (const std::string& body :
         {acquire_req("ro/b", "eve"), renew_req("ro/a", "alice"), release_req("ro/a", "alice"),
          std::string("\"op\":\"keepalive\",\"owner\":\"alice\""),
          std::string("\"op\":\"revoke\",\"key\":\"ro/a\""),
          "\"op\":\"backup\",\"dir\":" + quote(d.root() + "/backup")}) {
      INFO(body);
      Json r = c.call(body);
      check_error(r, kUnauthenticated, "Bearer");
      CHECK(r["id"].is_integer());
    }
    check_reads(c, "ro/a");
  }
  SECTION("a wrong token") {
    WsClient c(d.web_port(), WsOptions().bearer(std::string(64, '0')));
    check_error(c.call(acquire_req("ro/b", "eve")), kUnauthenticated);
    check_error(c.call("\"op\":\"revoke\",\"key\":\"ro/a\""), kUnauthenticated);
    check_reads(c, "ro/a");
  }
  // Nothing changed.
  Json g = admin.call(get_req("ro/a"));
  CHECK(g["lease"]["owner"] == "alice");
  CHECK(g["lease"]["ttl_ms"] == 30000);
  CHECK(admin.call(get_req("ro/b"))["last_token"] == 0);
}

TEST_CASE("WebSocket connections bind leases and hear of their loss", "[e2e][websocket]") {
  Daemon d(web_args());
  auto observer = d.connect();
  {
    WsClient c(d.web_port(), WsOptions().bearer(d.ws_token()));
    REQUIRE(c.call(acquire_req("b/lost", "o", "\"ttl_ms\":300"))["status"] == "acquired");
    Json lost = c.event(5000ms);
    CHECK(lost["event"] == "lost");
    CHECK(lost["key"] == "b/lost");
    CHECK(lost["reason"] == "expired");
    REQUIRE(c.call(acquire_req("b/rod", "o", "\"release_on_disconnect\":true"))["status"] ==
            "acquired");
    CHECK(observer.call(get_req("b/rod"))["lease"]["owner"] == "o");
  }
  // Closing the WebSocket released it.
  CHECK(wait_free(observer, "b/rod"));
}

TEST_CASE("the bearer token is made once, private, and never logged", "[e2e][websocket]") {
  Daemon d(web_args());
  std::string token = d.ws_token();
  CHECK(token.size() >= 32);  // 256 bits as hex
  CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
  struct stat info {};
  REQUIRE(::stat((d.data_dir() + "/ws.token").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  CHECK(d.log().find(token) == std::string::npos);
  d.terminate();
  d.start();
  CHECK(d.ws_token() == token);
}

TEST_CASE("a browser handshake from a foreign origin is refused with 403", "[e2e][websocket]") {
  Daemon d(web_args({"--ws-allow-origin", "https://ops.example.com"}));
  unsigned short port = d.web_port();
  std::string own = "http://127.0.0.1:" + std::to_string(port);
  CHECK(WsClient::upgrade_status(port, WsOptions().from("http://evil.example")) == 403);
  CHECK(WsClient::upgrade_status(port, WsOptions().from("null")) == 403);
  CHECK(WsClient::upgrade_status(port, WsOptions().from("http://127.0.0.1:1")) == 403);
  CHECK(WsClient::upgrade_status(
            port, WsOptions().bearer(d.ws_token()).from("http://evil.example")) == 403);
  CHECK(WsClient::upgrade_status(port, WsOptions().from(own)) == 101);
  CHECK(WsClient::upgrade_status(
            port, WsOptions().from("http://localhost:" + std::to_string(port))) == 101);
  CHECK(WsClient::upgrade_status(port, WsOptions().from("https://ops.example.com")) == 101);
  CHECK(WsClient::upgrade_status(port, WsOptions()) == 101);  // not a browser
  WsClient page(port, WsOptions().from(own));
  CHECK(page.call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("binary frames get bad_request and are otherwise ignored", "[e2e][websocket]") {
  Daemon d(web_args());
  WsClient c(d.web_port(), WsOptions().bearer(d.ws_token()));
  c.send_binary(R"({"id":1,"op":"acquire","key":"bin","owner":"o"})");
  Json r = c.anonymous_reply();
  check_error(r, "bad_request", "binary");
  CHECK(c.call(get_req("bin"))["last_token"] == 0);
  CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("an oversized frame gets frame_too_large and the connection stays", "[e2e][websocket]") {
  SECTION("the default limit, 64 KiB") {
    Daemon d(web_args());
    WsClient c(d.web_port(), WsOptions().bearer(d.ws_token()));
    std::string at_limit = R"({"id":1,"op":"ping")";
    at_limit += std::string(65536 - at_limit.size() - 1, ' ') + "}";
    REQUIRE(at_limit.size() == 65536);
    c.send_text(at_limit);
    CHECK(c.reply(1)["status"] == "pong");
    c.send_text(R"({"id":2,"op":"ping")" + std::string(65536, ' ') + "}");
    check_error(c.anonymous_reply(), "frame_too_large");
    CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
    // Far over the limit, and binary: still dropped piece by piece, connection kept.
    c.send_binary(std::string(5 << 20, 'x'));
    check_error(c.anonymous_reply(), "frame_too_large");
    CHECK(c.call(acquire_req("big", "o"))["status"] == "acquired");
  }
  SECTION("--max-frame") {
    Daemon d(web_args({"--max-frame", "1024"}));
    WsClient c(d.web_port());
    c.send_text(R"({"id":1,"op":"ping")" + std::string(2000, ' ') + "}");
    check_error(c.anonymous_reply(), "frame_too_large", "1024");
    CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
  }
}

TEST_CASE("malformed requests over WebSocket are bad_request", "[e2e][websocket]") {
  Daemon d(web_args());
  WsClient c(d.web_port());
  c.send_text("not json");
  check_error(c.anonymous_reply(), "bad_request");
  check_error(c.call("\"op\":\"nope\""), "bad_request", "op");
  check_error(c.call("\"op\":\"get\""), "bad_request", "key");
  CHECK(c.call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("undefined and repeated fields over WebSocket are bad_request naming them",
          "[e2e][websocket]") {
  Daemon d(web_args());
  WsClient c(d.web_port(), WsOptions().bearer(d.ws_token()));
  check_error(c.call(acquire_req("ws/strict", "o", "\"ttl\":50")), "bad_request", "\"ttl\"");
  c.send_text(R"({"op":"acquire","op":"get","key":"ws/strict","owner":"o"})");
  check_error(c.anonymous_reply(), "bad_request", "\"op\"");
  CHECK(c.call(get_req("ws/strict"))["lease"] == nullptr);
}

TEST_CASE("a WebSocket frame length with its top bit set closes the connection",
          "[e2e][websocket]") {
  Daemon d(web_args());
  int fd = connect_raw(d.web_port());
  send_raw(fd,
           "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  REQUIRE(read_head(fd).starts_with("HTTP/1.1 101"));
  // A masked text frame claiming 2^63 + 5 bytes, and a few of them.
  std::string frame = {'\x81', '\xff', '\x80', 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4};
  frame += std::string(1000, 'x');
  send_raw(fd, frame);
  ssize_t n = read_to_end(fd);
  // Closed (end or reset), not left waiting for more of the frame.
  CHECK((n == 0 || errno == ECONNRESET));
  ::close(fd);
  CHECK(WsClient(d.web_port()).call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("GET /healthz, /, and 404 elsewhere", "[e2e][websocket]") {
  Daemon d(web_args());
  unsigned short port = d.web_port();
  HttpResult health = http_get(port, "/healthz");
  CHECK(health.status == 200);
  CHECK(health.body == "ok\n");
  HttpResult page = http_get(port, "/");
  CHECK(page.status == 200);
  CHECK(page.content_type.starts_with("text/html"));
  CHECK(page.body.find("<html") != std::string::npos);
  CHECK(http_get(port, "/nope").status == 404);
  CHECK(http_get(port, "/v1/ws").status == 426);
}

TEST_CASE("a chunked request body gets 411 unread and the connection closes", "[e2e][websocket]") {
  Daemon d(web_args());
  int fd = connect_raw(d.web_port());
  // The header alone: the answer must not wait for the body.
  send_raw(fd, "PUT /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::string head = read_head(fd);
  CHECK(head.starts_with("HTTP/1.1 411"));
  CHECK(head.find("Connection: close") != std::string::npos);
  // The final chunk in pieces, as a slow client sends it, whether or not the server still reads.
  for (const char* piece : {"0\r\n", "\r", "\n"}) {
    (void)::send(fd, piece, std::strlen(piece), MSG_NOSIGNAL);
  }
  ssize_t n = read_to_end(fd);
  CHECK((n == 0 || errno == ECONNRESET));
  ::close(fd);
  CHECK(http_get(d.web_port(), "/healthz").status == 200);
}

TEST_CASE("GET /metrics is Prometheus text with the server's numbers", "[e2e][websocket]") {
  Daemon d(web_args());
  unsigned short port = d.web_port();
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("m/a", "o", "\"ttl_ms\":30000"))["status"] == "acquired");
  REQUIRE(c.call(acquire_req("m/a", "p"))["status"] == "held");
  REQUIRE(c.call(acquire_req("m/b", "o", "\"ttl_ms\":20"))["status"] == "acquired");
  check_error(c.call("\"op\":\"get\""), "bad_request");
  REQUIRE(c.call("\"op\":\"watch\"")["status"] == "watching");
  WsClient ws(port);
  REQUIRE(ws.call("\"op\":\"ping\"")["status"] == "pong");
  REQUIRE(wait_free(c, "m/b"));

  HttpResult metrics = http_get(port, "/metrics");
  CHECK(metrics.status == 200);
  CHECK(metrics.content_type.starts_with("text/plain; version=0.0.4"));
  Exposition e = parse_exposition(metrics.body);
  INFO(metrics.body);
  CHECK(e.problems.empty());
  for (const auto& problem : e.problems) UNSCOPED_INFO(problem);
  for (const auto& [series, value] : e.samples) {
    CHECK((series.starts_with("tenure_") || series.starts_with("process_")));
  }
  CHECK(e.samples["tenure_live_leases"] == 1);
  CHECK(e.samples["tenure_revision"] >= 3);
  CHECK(e.samples["tenure_watchers"] == 1);
  CHECK(e.samples["tenure_connections{transport=\"unix\"}"] == 1);
  CHECK(e.samples["tenure_connections{transport=\"websocket\"}"] == 1);
  CHECK(e.samples["tenure_replies_total{op=\"acquire\",status=\"acquired\"}"] == 2);
  CHECK(e.samples["tenure_replies_total{op=\"acquire\",status=\"held\"}"] == 1);
  CHECK(e.samples["tenure_replies_total{op=\"ping\",status=\"pong\"}"] == 1);
  CHECK(e.samples["tenure_errors_total{code=\"bad_request\"}"] == 1);
  CHECK(e.samples["tenure_events_published_total"] >= 3);
  CHECK(e.samples.contains("tenure_expiry_lateness_seconds_count"));
  CHECK(e.samples["tenure_commit_batch_size_count"] >= 1);
  CHECK(e.samples["tenure_commit_batch_size_sum"] >= e.samples["tenure_commit_batch_size_count"]);
  CHECK(e.types["tenure_commit_write_seconds"] == "histogram");
  // A single node has no other writer to conflict with.
  CHECK(e.types["tenure_commit_conflicts_total"] == "counter");
  CHECK(e.samples["tenure_commit_conflicts_total"] == 0);
  CHECK(e.types["tenure_commit_writer_wakeups_total"] == "counter");
  CHECK(e.samples["tenure_commit_writer_wakeups_total"] > 0);
  // The test's requests come one at a time: some are committed without a hand-off.
  CHECK(e.types["tenure_commit_groups_here_total"] == "counter");
  CHECK(e.samples["tenure_commit_groups_here_total"] > 0);
  CHECK(e.types["tenure_replies_total"] == "counter");
  // Bounds as written by hand; every histogram has its sum (the checker insists).
  CHECK(e.samples.contains("tenure_expiry_lateness_seconds_bucket{le=\"0.001\"}"));
  CHECK(e.samples.contains("tenure_commit_write_seconds_bucket{le=\"0.000255\"}"));
  CHECK(e.samples.contains("tenure_expiry_lateness_seconds_sum"));
  CHECK(e.samples.contains("tenure_commit_write_seconds_sum"));
  auto build_info = e.samples.lower_bound("tenure_build_info{version=\"");
  REQUIRE(build_info != e.samples.end());
  CHECK(build_info->first.starts_with("tenure_build_info{version=\""));
  CHECK(build_info->second == 1);
  // The standard process metrics, with values a running server must have.
  double now = static_cast<double>(std::time(nullptr));
  CHECK(e.samples["tenure_process_start_time_seconds"] > now - 3600);
  CHECK(e.samples["tenure_process_start_time_seconds"] <= now + 1);
  CHECK(e.samples.contains("tenure_process_cpu_seconds_total"));
  CHECK(e.samples["tenure_process_resident_memory_bytes"] > 1024 * 1024);
  CHECK(e.samples["tenure_process_open_fds"] >= 5);  // the socket, the ledger, the listener, ...
  CHECK(e.samples["tenure_process_max_fds"] >= e.samples["tenure_process_open_fds"]);
  CHECK(e.types["tenure_process_cpu_seconds_total"] == "counter");
  // §7a: every metric name is prefixed tenure_.
  for (const auto& [sample, value] : e.samples) {
    INFO(sample);
    CHECK(sample.starts_with("tenure_"));
  }
}

TEST_CASE("the checker refuses what is not Prometheus text", "[e2e][websocket]") {
  CHECK(parse_exposition("a 1\n").problems.empty());
  CHECK_FALSE(parse_exposition("a 1").problems.empty());
  CHECK_FALSE(parse_exposition("1a 1\n").problems.empty());
  CHECK_FALSE(parse_exposition("a{b=\"1} 1\n").problems.empty());
  CHECK_FALSE(parse_exposition("a one\n").problems.empty());
  CHECK_FALSE(parse_exposition("a 1\na 2\n").problems.empty());
  CHECK_FALSE(parse_exposition("a 1\n# TYPE a gauge\n").problems.empty());
  CHECK_FALSE(
      parse_exposition("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_count 2\n").problems.empty());
  CHECK(parse_exposition("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 3\n"
                         "h_sum 4\nh_count 3\n")
            .problems.empty());
  CHECK_FALSE(parse_exposition("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_count 3\n")
                  .problems.empty());
  CHECK_FALSE(parse_exposition("# TYPE h histogram\nh_bucket{le=\"0.00025499999999999996\"} 2\n"
                               "h_bucket{le=\"+Inf\"} 3\nh_sum 4\nh_count 3\n")
                  .problems.empty());
}

TEST_CASE("the listener stays on loopback unless told otherwise", "[e2e][websocket]") {
  TempDir dir;
  ProcessOptions quick;
  quick.timeout = 10000ms;
  ProcessResult r = run_process(
      {tenured_path(), "--data-dir", dir.path() + "/data", "--ws-listen", "0.0.0.0:0"}, quick);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("--ws-allow-remote") != std::string::npos);
  r = run_process({tenured_path(), "--data-dir", dir.path() + "/data", "--ws-listen", "nohost:1"},
                  quick);
  CHECK(r.exit_code == 1);
}

TEST_CASE("connections past --max-connections get 429, and /healthz keeps 503 for the ledger",
          "[e2e][websocket]") {
  Daemon d(web_args({"--max-connections", "2"}));
  unsigned short port = d.web_port();
  WsClient a(port);
  WsClient b(port);
  CHECK(WsClient::upgrade_status(port, WsOptions()) == 429);
  // Full slots say nothing about the ledger: a health check must not read them as unhealthy.
  CHECK(http_get(port, "/healthz").status == 429);
  CHECK(a.call("\"op\":\"ping\"")["status"] == "pong");
}

TEST_CASE("SIGTERM ends WebSocket connections cleanly", "[e2e][websocket]") {
  Daemon d(web_args());
  WsClient watcher(d.web_port());
  REQUIRE(watcher.call("\"op\":\"watch\"")["status"] == "watching");
  WsClient idle(d.web_port());
  ProcessResult r = d.terminate(10000ms);
  CHECK(r.exited);
  CHECK(r.exit_code == 0);
  CHECK(watcher.wait_closed(5000ms));
  CHECK(idle.wait_closed(5000ms));
}
