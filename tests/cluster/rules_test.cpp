// The contract's lease rules (§3, §5) over each node's socket, for a key the node owns (run by
// its own engine) and for one another node owns (forwarded over the peer link): every node
// serves the whole contract for the whole keyspace (§10).
#include <catch2/catch.hpp>

#include "tests/cluster/checks.hpp"
#include "tests/e2e/e2e.hpp"

namespace cluster {
namespace {

using e2e::acquire_req;
using e2e::get_req;
using e2e::Json;
using e2e::release_req;
using e2e::renew_req;

// The rules on `key` through node `at`, with a second client on node `other`.
void rules(Cluster& cluster, int at, int other, const std::string& key) {
  INFO("key " << key << " through " << cluster.node_id(at) << " (its slot owned by "
              << cluster.node_id(*cluster.owner_of(key)) << "), other client on "
              << cluster.node_id(other));
  FencingChecker checker;
  Sequence seq{"client"};
  auto a = cluster.connect(at);
  auto b = cluster.connect(other);
  auto call = [&](e2e::LineClient& c, const std::string& body) {
    Json r = c.call(body);
    checker.on_reply(r, &seq);
    return r;
  };

  // A fresh tenure: token 1, the lease object, a revision.
  Json r = call(a, acquire_req(key, "A", "\"ttl_ms\":5000"));
  REQUIRE(r["status"] == "acquired");
  CHECK(r["fresh"] == true);
  e2e::check_lease_object(r, key, "A", 1, 5000);
  const std::uint64_t first_revision = r["revision"].u64();
  CHECK(first_revision > 0);

  // Idempotent re-acquire keeps the token; another owner (on another node) sees it held.
  r = call(a, acquire_req(key, "A", "\"ttl_ms\":5000"));
  CHECK(r["status"] == "acquired");
  CHECK(r["fresh"] == false);
  CHECK(r["token"] == 1);
  r = call(b, acquire_req(key, "B"));
  CHECK(r["status"] == "held");
  CHECK(r["holder"] == "A");
  CHECK(r["token"] == 1);
  r = call(b, renew_req(key, "B"));
  CHECK(r["status"] == "not_holder");
  CHECK(r["reason"] == "held_by_other");
  r = call(a, renew_req(key, "A", "\"token\":1"));
  CHECK(r["status"] == "renewed");
  CHECK(r["token"] == 1);
  r = b.call("\"op\":\"check\",\"key\":" + e2e::quote(key) + ",\"token\":1");
  CHECK(r["status"] == "valid");
  r = b.call(get_req(key));
  CHECK(r["lease"]["owner"] == "A");
  CHECK(r["last_token"] == 1);

  // FIFO hand-over across nodes: B waits on its node, A releases on its own.
  auto waiting = b.send(acquire_req(key, "B", "\"ttl_ms\":5000,\"wait_ms\":10000"));
  REQUIRE(e2e::wait_waiters(a, key, 1));
  r = call(a, release_req(key, "A"));
  CHECK(r["status"] == "released");
  CHECK(r["token"] == 1);
  r = b.reply(waiting);
  checker.on_reply(r, &seq);
  CHECK(r["status"] == "acquired");
  CHECK(r["token"] == 2);
  CHECK(r["owner"] == "B");
  r = call(b, release_req(key, "B", "\"token\":2"));
  CHECK(r["status"] == "released");
  r = call(b, release_req(key, "B"));  // idempotent
  CHECK(r["status"] == "released");
  CHECK(r["token"] == nullptr);

  // Expiry by the owner's timer, told to the acquiring connection (`lost`), then lock-delay.
  r = call(a, acquire_req(key, "A", "\"ttl_ms\":300,\"lock_delay_ms\":1500"));
  REQUIRE(r["status"] == "acquired");
  CHECK(r["token"] == 3);
  Json lost = a.event(3000ms);
  CHECK(lost["event"] == "lost");
  CHECK(lost["key"] == key);
  CHECK(lost["token"] == 3);
  CHECK(lost["reason"] == "expired");
  r = call(b, acquire_req(key, "B"));
  CHECK(r["status"] == "held");
  CHECK(r["reason"] == "lock_delay");
  CHECK(r["holder"] == nullptr);
  r = b.call(renew_req(key, "A"));
  CHECK(r["status"] == "not_holder");
  CHECK(r["reason"] == "expired");

  // Waiters wait out the lock-delay; the grant comes from the owner's timer.
  r = call(b, acquire_req(key, "B", "\"ttl_ms\":5000,\"wait_ms\":5000"));
  CHECK(r["status"] == "acquired");
  CHECK(r["token"] == 4);

  // Revoke (the test runs as the server's user: an admin).
  r = a.call("\"op\":\"revoke\",\"key\":" + e2e::quote(key) + ",\"reason\":\"rules\"");
  CHECK(r["status"] == "revoked");
  CHECK(r["token"] == 4);

  // History through a third view: newest first, each tenure's end.
  auto history = e2e::full_history(b, key);
  REQUIRE(history.size() == 4);
  CHECK(history[0]["end"] == "revoked");
  CHECK(history[1]["end"] == "expired");
  CHECK(history[2]["end"] == "released");
  CHECK(history[3]["end"] == "released");

  // A watch on another node replays from the first revision, in order, every event of the key.
  auto w = cluster.connect(other);
  r = w.call("\"op\":\"watch\",\"key\":" + e2e::quote(key) +
             ",\"from_revision\":" + std::to_string(first_revision));
  REQUIRE(r["status"] == "watching");
  std::vector<std::string> types;
  std::uint64_t previous = 0;
  for (int i = 0; i < 10; ++i) {
    Json e = w.event();
    CHECK(e["revision"].u64() > previous);
    previous = e["revision"].u64();
    types.push_back(e["event"].str());
  }
  CHECK(types == std::vector<std::string>{"acquired", "renewed", "renewed", "released", "acquired",
                                          "released", "acquired", "expired", "acquired",
                                          "revoked"});

  // A connection-bound lease ends when its connection closes, whichever node owns the key.
  std::string bound = key + "/bound";
  auto c = cluster.connect(at);
  r = c.call(acquire_req(bound, "C", "\"release_on_disconnect\":true"));
  REQUIRE(r["status"] == "acquired");
  c.close();
  CHECK(e2e::wait_free(b, bound, 5000ms));

  for (const auto& v : checker.verify()) FAIL_CHECK(v);
}

TEST_CASE("the lease rules hold through every node, on keys it owns and keys it forwards",
          CLUSTER_TAG "[rules]") {
  Cluster cluster;
  for (int at = 0; at < cluster.size(); ++at) {
    const int other = (at + 1) % cluster.size();
    const std::string prefix = "rules/" + std::to_string(at) + "/";
    // The writer owns every slot and forwards nothing; the other nodes forward everything.
    if (cluster.writer() == at) {
      rules(cluster, at, other, cluster.key_owned_by(at, prefix + "local/"));
    } else {
      rules(cluster, at, other, cluster.key_not_owned_by(at, prefix + "remote/"));
    }
  }
}

TEST_CASE("keepalive, stats and watches span the cluster", CLUSTER_TAG "[rules]") {
  Cluster cluster;
  // One owner's leases on keys of every node's slots, acquired through every node.
  std::vector<std::string> keys;
  for (int i = 0; i < cluster.size(); ++i) {
    try {
      keys.push_back(cluster.key_owned_by(i, "ka/" + std::to_string(i) + "/"));
    } catch (const std::runtime_error&) {
    }
  }
  auto watch = cluster.connect(2);
  Json w = watch.call("\"op\":\"watch\",\"prefix\":\"ka/\"");
  REQUIRE(w["status"] == "watching");
  for (std::size_t k = 0; k < keys.size(); ++k) {
    auto c = cluster.connect(static_cast<int>(k) % cluster.size());
    Json r = c.call(e2e::acquire_req(keys[k], "O", "\"ttl_ms\":5000"));
    REQUIRE(r["status"] == "acquired");
  }
  auto c = cluster.connect(0);
  Json r = c.call("\"op\":\"keepalive\",\"owner\":\"O\",\"ttl_ms\":7000");
  CHECK(r["status"] == "renewed");
  CHECK(r["count"] == keys.size());
  // The watch on node 3 saw every acquire and renewal, in revision order.
  std::uint64_t previous = 0;
  for (std::size_t i = 0; i < 2 * keys.size(); ++i) {
    Json e = watch.event();
    CHECK(e["revision"].u64() > previous);
    previous = e["revision"].u64();
  }
  // stats: which node, the live nodes, and every slot on the writer.
  const auto writer = cluster.writer();
  REQUIRE(writer);
  for (int i = 0; i < cluster.size(); ++i) {
    Json s = cluster.connect(i).call("\"op\":\"stats\"");
    REQUIRE(s["status"] == "ok");
    CHECK(s["cluster"]["node_id"] == cluster.node_id(i));
    CHECK(s["cluster"]["nodes"].size() == 3);
    CHECK(s["cluster"]["slots_owned"] == (i == *writer ? 64u : 0u));
  }
}

}  // namespace
}  // namespace cluster
