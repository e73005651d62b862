// Two nodes in one process, each a real engine on its own RocksDB with its Unix socket, peer
// listener and router, over a fake cluster view: the peer link and forwarding, without etcd.
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "core/cluster_view.hpp"
#include "core/slot.hpp"
#include "tests/e2e/line_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "transports/peer_session.hpp"
#include "transports/peer_wire.hpp"
#include "transports/request_parser.hpp"
#include "transports/router.hpp"
#include "transports/unix_server.hpp"

namespace tenure::test {
namespace {

using namespace std::chrono_literals;
using e2e::Json;
using e2e::LineClient;

// Who owns each slot and where the nodes listen, shared by the nodes' views.
struct FakeCluster {
  std::mutex mutex;
  std::array<std::string, kSlots> owners;
  std::vector<ClusterView::Node> nodes;
  std::string secret = "0123456789abcdef";
  std::chrono::milliseconds claim_wait{2'000};

  void own(std::uint32_t slot, const std::string& node) {
    std::lock_guard lock(mutex);
    owners[slot] = node;
  }
  void own_all(const std::string& node) {
    std::lock_guard lock(mutex);
    owners.fill(node);
  }
};

class FakeView final : public ClusterView {
 public:
  FakeView(FakeCluster& cluster, std::string id) : cluster_(cluster), id_(std::move(id)) {}
  const std::string& node_id() const override { return id_; }
  std::string owner(std::uint32_t slot) const override {
    std::lock_guard lock(cluster_.mutex);
    return cluster_.owners[slot];
  }
  std::vector<Node> nodes() const override {
    std::lock_guard lock(cluster_.mutex);
    return cluster_.nodes;
  }
  std::string secret() const override { return cluster_.secret; }
  std::chrono::milliseconds claim_wait() const override {
    std::lock_guard lock(cluster_.mutex);
    return cluster_.claim_wait;
  }

 private:
  FakeCluster& cluster_;
  const std::string id_;
};

class Node {
 public:
  Node(FakeCluster& cluster, const std::string& id)
      : view_(cluster, id), work_(io_.get_executor()) {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
    EngineConfig config;
    config.data_dir = dir_.str("ledger");
    config.shards = 2;
    std::string error;
    engine_ = Engine::open(io_, clock_, config, error);
    REQUIRE(engine_);
    REQUIRE(engine_->start(error));
    context_.reset(new ServerContext{*engine_, {}, clock_.now(), {}, {}});
    unix_ = std::make_unique<UnixServer>(io_, *context_, 100);
    REQUIRE(unix_->listen(socket(), error));
    unix_->start();
    peers_ = std::make_unique<PeerServer>(io_, *context_, view_);
    REQUIRE(peers_->listen("127.0.0.1:0", error));
    peers_->start();
    router_ = std::make_unique<Router>(io_, *context_, view_);
    context_->router = router_.get();
    std::lock_guard lock(cluster.mutex);
    cluster.nodes.push_back({id, peer_address()});
  }
  ~Node() {
    unix_->stop();
    peers_->stop();
    router_->stop();
    context_->registry.drain_all();
    engine_->stop();
    context_->registry.abort_all();
    context_->registry.wait_empty(5s);
    work_.reset();
    io_.stop();
    for (auto& thread : threads_) thread.join();
  }

  std::string socket() const { return dir_.str("sock"); }
  unsigned short peer_port() const { return peers_->port(); }
  std::string peer_address() const { return "127.0.0.1:" + std::to_string(peer_port()); }
  // The node's links to the others close, as when it dies.
  void cut_links() { router_->stop(); }
  // The links of the others to this node close.
  void close_peer_listener() { peers_->stop(); }

 private:
  TempDir dir_;
  SystemClock clock_;
  FakeView view_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ServerContext> context_;
  std::unique_ptr<UnixServer> unix_;
  std::unique_ptr<PeerServer> peers_;
  std::unique_ptr<Router> router_;
};

// A key whose slot differs from `other`'s.
std::string key_in_another_slot(const std::string& other) {
  for (int i = 0;; ++i) {
    std::string key = "key-" + std::to_string(i);
    if (slot_of(key) != slot_of(other)) return key;
  }
}

// Polls `get` of `key` on `client` until its lease is null or the time is up.
bool becomes_free(LineClient& client, const std::string& key, std::chrono::milliseconds within) {
  auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    if (client.call(R"("op":"get","key":")" + key + "\"")["lease"].is_null()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// A raw peer link: one TCP connection, a line at a time.
class RawLink {
 public:
  explicit RawLink(unsigned short port) : socket_(io_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    timeval timeout{10, 0};  // a server that sends nothing fails the test instead of hanging it
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  void send(const std::string& line) {
    boost::asio::write(socket_, boost::asio::buffer(line + "\n"));
  }
  // The next line, or empty when the link closed.
  std::string line() {
    boost::system::error_code ec;
    std::size_t n = boost::asio::read_until(socket_, boost::asio::dynamic_buffer(input_), '\n', ec);
    if (ec) return {};
    std::string line = input_.substr(0, n - 1);
    input_.erase(0, n);
    return line;
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  std::string input_;
};

std::string hello(const std::string& node, const std::string& secret) {
  std::string out;
  format_peer_hello(out, node, secret);
  return out;
}

std::string forwarded(const std::string& body, std::uint64_t link_id) {
  std::string out;
  std::string line = "{" + body + "}";
  format_forwarded(out, Via{"a", 7, 1000, false}, link_id, line, std::nullopt);
  return out;
}

// Nodes a and b, b owning every slot, and a client on each.
struct TwoNodes {
  TwoNodes() { cluster.own_all("b"); }

  FakeCluster cluster;
  Node a{cluster, "a"};
  Node b{cluster, "b"};
  LineClient on_a{a.socket()};
  LineClient on_b{b.socket()};
};

}  // namespace

TEST_CASE("a forwarded line carries who asked and the link id, on one line", "[peer]") {
  RequestParser parser;
  std::string line = "{\"id\": \"x\",\n \"op\": \"get\",\n \"key\": \"k\"}";
  REQUIRE(std::holds_alternative<RequestBody>(parser.parse(line).body));
  std::string out;
  format_forwarded(out, Via{"a", 7, 1000, true}, 9, line, parser.id_span());
  CHECK(out.find('\n') == std::string::npos);

  auto parsed = parse_forwarded(out);
  auto* request = std::get_if<PeerRequest>(&parsed);
  REQUIRE(request);
  CHECK(request->via.node == "a");
  CHECK(request->via.conn == 7);
  CHECK(request->via.uid == 1000);
  CHECK(request->via.admin);
  CHECK_FALSE(request->disconnect);
  ParsedRequest again = parser.parse(request->request);
  CHECK(again.id == "9");
  auto* body = std::get_if<RequestBody>(&again.body);
  REQUIRE(body);
  CHECK(std::get<GetRequest>(*body).key == "k");
}

TEST_CASE("a peer link with the cluster's secret is served; a wrong secret closes it", "[peer]") {
  FakeCluster cluster;
  Node b(cluster, "b");
  cluster.own_all("b");

  RawLink good(b.peer_port());
  good.send(hello("a", cluster.secret));
  good.send(forwarded(R"("op":"get","key":"k")", 41));
  auto reply = Json::parse(good.line());
  REQUIRE(reply);
  CHECK((*reply)["id"] == 41);
  CHECK((*reply)["status"] == "ok");

  RawLink bad(b.peer_port());
  bad.send(hello("a", "not the secret"));
  bad.send(forwarded(R"("op":"get","key":"k")", 42));
  CHECK(bad.line().empty());
}

TEST_CASE_METHOD(TwoNodes, "a forwarded request gets the owner's reply under the client's own id",
                 "[peer]") {
  on_a.send_line(R"({"id":"mine","op":"acquire","key":"k","owner":"o","ttl_ms":60000})");
  Json acquired = on_a.reply_with_id(R"("mine")");
  CHECK(acquired["status"] == "acquired");
  CHECK(acquired["token"] == 1);
  // It was served by b: b's engine holds the lease.
  CHECK(on_b.call(R"("op":"get","key":"k")")["lease"]["owner"] == "o");

  // No id, or a null one: a reply without one.
  on_a.send_line(R"({"op":"check","key":"k","token":1})");
  Json anonymous = on_a.anonymous_reply();
  CHECK(anonymous["status"] == "valid");
  CHECK_FALSE(anonymous.has("id"));
  on_a.send_line(R"({"id":null,"op":"check","key":"k","token":1})");
  CHECK_FALSE(on_a.anonymous_reply().has("id"));
}

TEST_CASE_METHOD(TwoNodes, "pipelined forwarded requests keep their order per key", "[peer]") {
  std::string burst;
  constexpr int kRenews = 50;
  burst += R"({"id":0,"op":"acquire","key":"k","owner":"o1","ttl_ms":60000})"
           "\n";
  for (int i = 1; i <= kRenews; ++i) {
    burst += R"({"id":)" + std::to_string(i) + R"(,"op":"renew","key":"k","owner":"o1","ttl_ms":)" +
             std::to_string(60000 + i) + "}\n";
  }
  burst += R"({"id":51,"op":"release","key":"k","owner":"o1"})"
           "\n";
  burst += R"({"id":52,"op":"acquire","key":"k","owner":"o2","ttl_ms":60000})"
           "\n";
  REQUIRE(on_a.send_bytes(burst));
  REQUIRE(on_a.wait_lines(kRenews + 3, 10s));
  for (int i = 0; i < kRenews + 3; ++i) {
    auto line = Json::parse(on_a.lines()[i]);
    REQUIRE(line);
    CHECK((*line)["id"] == i);
  }
  CHECK(on_a.reply(kRenews)["ttl_ms"] == 60000 + kRenews);
  CHECK(on_a.reply(51)["status"] == "released");
  Json second = on_a.reply(52);
  CHECK(second["status"] == "acquired");
  CHECK(second["token"] == 2);
}

TEST_CASE_METHOD(TwoNodes, "a client that stops sending still gets every forwarded reply",
                 "[peer]") {
  constexpr int kRequests = 20;
  std::string burst;
  for (int i = 0; i < kRequests; ++i) {
    burst += R"({"id":)" + std::to_string(i) + R"(,"op":"acquire","owner":"o","ttl_ms":60000,)" +
             R"("key":"k)" + std::to_string(i) + "\"}\n";
  }
  REQUIRE(on_a.send_bytes(burst));
  ::shutdown(on_a.fd(), SHUT_WR);
  for (int i = 0; i < kRequests; ++i) CHECK(on_a.reply(i)["status"] == "acquired");
}

TEST_CASE_METHOD(TwoNodes, "a lost notice for a proxied connection reaches its client", "[peer]") {
  REQUIRE(on_a.call(R"("op":"acquire","key":"k","owner":"o","ttl_ms":60000)")["status"] ==
          "acquired");
  // This test's uid runs the daemons, so it is an admin on b.
  REQUIRE(on_b.call(R"("op":"revoke","key":"k","reason":"test")")["status"] == "revoked");
  Json lost = on_a.event(5s);
  CHECK(lost["event"] == "lost");
  CHECK(lost["key"] == "k");
  CHECK(lost["reason"] == "revoked");
  CHECK_FALSE(lost.has("via_conn"));
}

TEST_CASE_METHOD(TwoNodes,
                 "a connection-bound lease taken through another node ends with its connection",
                 "[peer]") {
  REQUIRE(
      on_a.call(R"("op":"acquire","key":"k","owner":"o","release_on_disconnect":true)")["status"] ==
      "acquired");
  SECTION("the client disconnects") { on_a.close(); }
  SECTION("its node goes away") { a.cut_links(); }
  CHECK(becomes_free(on_b, "k", 5s));
}

TEST_CASE_METHOD(TwoNodes, "a broken link closes the connections that bound leases over it",
                 "[peer]") {
  LineClient unbound(a.socket());
  REQUIRE(
      on_a.call(R"("op":"acquire","key":"k","owner":"o","release_on_disconnect":true)")["status"] ==
      "acquired");
  REQUIRE(unbound.call(R"("op":"acquire","key":"k2","owner":"o")")["status"] == "acquired");
  b.close_peer_listener();
  CHECK(on_a.wait_closed(5s));
  CHECK(unbound.call(R"("op":"ping")")["status"] == "pong");
  CHECK(becomes_free(on_b, "k", 5s));
}

TEST_CASE_METHOD(TwoNodes,
                 "a request for a slot nobody owns waits for a claim, then is unavailable",
                 "[peer]") {
  cluster.own(slot_of("k"), "");
  auto id = on_a.send(R"("op":"acquire","key":"k","owner":"o")");
  std::this_thread::sleep_for(100ms);
  cluster.own(slot_of("k"), "b");  // well within the default claim_wait of 2 s
  CHECK(on_a.reply(id)["status"] == "acquired");

  {
    std::lock_guard lock(cluster.mutex);
    cluster.claim_wait = 300ms;
  }
  cluster.own(slot_of("k"), "");
  Json refused = on_a.call(R"("op":"get","key":"k")");
  CHECK(refused["status"] == "error");
  CHECK(refused["error"] == "unavailable");
}

TEST_CASE_METHOD(TwoNodes,
                 "a request waiting on a node that stalls is unavailable once the node leaves",
                 "[peer]") {
  // A stalled node: its listener takes connections (the kernel does) but nothing reads them.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor stalled(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  {
    std::lock_guard lock(cluster.mutex);
    cluster.claim_wait = 10s;
    cluster.nodes.push_back({"c", "127.0.0.1:" + std::to_string(stalled.local_endpoint().port())});
  }
  cluster.own(slot_of("k"), "c");
  auto sent = std::chrono::steady_clock::now();
  auto id = on_a.send(R"("op":"acquire","key":"k","owner":"o")");
  std::this_thread::sleep_for(300ms);
  // Its etcd lease expired: its registration and its claims are gone from the view.
  {
    std::lock_guard lock(cluster.mutex);
    std::erase_if(cluster.nodes, [](const ClusterView::Node& node) { return node.id == "c"; });
  }
  cluster.own(slot_of("k"), "");
  Json refused = on_a.reply(id);
  CHECK(refused["error"] == "unavailable");
  // Well before the deadline (the claim wait, 10 s): the client can retry with the new owner.
  CHECK(std::chrono::steady_clock::now() - sent < 3s);
  cluster.own(slot_of("k"), "b");
  CHECK(on_a.call(R"("op":"acquire","key":"k","owner":"o")")["status"] == "acquired");
}

TEST_CASE_METHOD(TwoNodes, "replies on one key keep request order while its slot moves", "[peer]") {
  SECTION("from a node that stalls to this one") {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor stalled(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    {
      std::lock_guard lock(cluster.mutex);
      cluster.nodes.push_back(
          {"c", "127.0.0.1:" + std::to_string(stalled.local_endpoint().port())});
    }
    cluster.own(slot_of("k"), "c");
    on_a.send_line(R"({"id":1,"op":"get","key":"k"})");
    std::this_thread::sleep_for(100ms);  // on its way to c
    cluster.own(slot_of("k"), "a");
    on_a.send_line(R"({"id":2,"op":"check","key":"k","token":1})");
    // Served here at once, the check would overtake the get still waiting on c.
    CHECK(on_a.unexpected_lines(300ms).empty());
    {
      std::lock_guard lock(cluster.mutex);
      std::erase_if(cluster.nodes, [](const ClusterView::Node& node) { return node.id == "c"; });
    }
    REQUIRE(on_a.wait_lines(2, 10s));
    CHECK(on_a.arrival_order() == std::vector<std::string>{"1", "2"});
    CHECK(on_a.reply(1)["error"] == "unavailable");
    CHECK(on_a.reply(2)["status"] == "not_holder");
  }
  SECTION("from nobody to this node") {
    cluster.own(slot_of("k"), "");
    std::string burst = R"({"id":1,"op":"acquire","key":"k","owner":"o","ttl_ms":60000})"
                        "\n";
    REQUIRE(on_a.send_bytes(burst));
    std::this_thread::sleep_for(50ms);  // read, and waiting for the claim
    cluster.own(slot_of("k"), "a");
    on_a.send_line(R"({"id":2,"op":"check","key":"k","token":1})");
    REQUIRE(on_a.wait_lines(2, 10s));
    CHECK(on_a.arrival_order() == std::vector<std::string>{"1", "2"});
    CHECK(on_a.reply(1)["status"] == "acquired");
    CHECK(on_a.reply(2)["status"] == "valid");
  }
}

TEST_CASE_METHOD(TwoNodes, "keepalive renews the owner's leases on every node", "[peer]") {
  std::string here = "k";
  std::string there = key_in_another_slot(here);
  cluster.own_all("a");
  cluster.own(slot_of(there), "b");
  for (const auto& key : {here, there}) {
    REQUIRE(on_a.call(R"("op":"acquire","owner":"o","ttl_ms":60000,"key":")" + key +
                      "\"")["status"] == "acquired");
  }
  Json renewed = on_a.call(R"("op":"keepalive","owner":"o")");
  CHECK(renewed["status"] == "renewed");
  CHECK(renewed["count"] == 2);
}

}  // namespace tenure::test
