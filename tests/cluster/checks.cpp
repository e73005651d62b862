#include "tests/cluster/checks.hpp"

#include <map>
#include <set>

#include "tests/e2e/e2e.hpp"

namespace cluster {

void check_fencing(const FencingChecker& checker) {
  for (const auto& v : checker.verify()) {
    INFO(v);
    CHECK(false);
  }
}

void check_load(const Load& load) {
  INFO(load.summary());
  for (const auto& f : load.failures()) {
    INFO(f);
    CHECK(false);
  }
}

int running_node(Cluster& cluster, std::optional<int> not_node) {
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.running(i) && i != not_node) return i;
  }
  throw std::runtime_error("no running node");
}

namespace {

// `get` through a running node, retried while the key's slot is between owners.
e2e::Json get_settled(Cluster& cluster, e2e::LineClient& c, const std::string& key) {
  auto deadline = std::chrono::steady_clock::now() + cluster.failover_bound() + 2000ms;
  for (;;) {
    e2e::Json r = c.call(e2e::get_req(key), cluster.failover_bound() + 2000ms);
    if (r["status"] == "ok" || std::chrono::steady_clock::now() >= deadline) return r;
    std::this_thread::sleep_for(50ms);
  }
}

}  // namespace

void check_holds(Cluster& cluster, const FencingChecker& checker) {
  std::map<std::string, Hold> last;  // per key, its highest unreleased tenure
  for (Hold& h : checker.holds()) {
    if (h.released_revision || h.release_sent_at || h.disconnected_at) continue;
    auto& slot = last[h.key];
    if (h.token > slot.token) slot = std::move(h);
  }
  auto c = cluster.connect(running_node(cluster));
  int live = 0, ended = 0;
  for (const auto& [key, hold] : last) {
    std::int64_t now = e2e::wall_now_ms();
    if (hold.expires_at > now - 500 && hold.expires_at < now + 500) continue;  // racing its end
    e2e::Json r = get_settled(cluster, c, key);
    INFO("tenure " << hold.token << " of " << key << " by " << hold.owner << ", acknowledged until "
                   << hold.expires_at << " (now " << now << "): " << r.source());
    REQUIRE(r["status"] == "ok");
    CHECK(r["last_token"].u64() >= hold.token);
    e2e::Json lease = r["lease"];
    if (hold.expires_at > now) {
      ++live;
      CHECK(lease["token"] == hold.token);
      CHECK(lease["owner"] == hold.owner);
    } else {
      ++ended;
      if (!lease.is_null()) {
        CHECK(lease["token"].u64() > hold.token);
        CHECK(e2e::time_ms(lease["acquired_at"]).value_or(0) + FencingChecker::kClockSlackMs >=
              hold.expires_at);
      }
    }
  }
  std::printf("cluster: %d acknowledged leases still held, %d ended by their deadlines\n", live,
              ended);
}

void check_watch(const Watcher& watcher, const FencingChecker& checker) {
  for (const auto& f : watcher.failures()) {
    INFO(f);
    CHECK(false);
  }
  std::map<std::uint64_t, SeenEvent> seen;
  for (const auto& e : watcher.events()) seen[e.revision] = e;
  const std::uint64_t after = watcher.started_after();
  std::size_t matched = 0;
  for (const auto& change : checker.changes()) {
    if (change.revision <= after) continue;
    auto it = seen.find(change.revision);
    INFO("acknowledged change at revision " << change.revision << ": " << change.what << " "
                                            << change.key << " token " << change.token);
    REQUIRE(it != seen.end());
    CHECK(it->second.type == change.what);
    CHECK(it->second.key == change.key);
    CHECK(it->second.token == change.token);
    ++matched;
  }
  std::printf("cluster: the watch saw %zu events (%d resumes), %zu of them acknowledged changes\n",
              seen.size(), watcher.resumes(), matched);
}

void check_after_load(Cluster& cluster, Load& load, const FencingChecker& checker,
                      const std::vector<Watcher*>& watchers, const std::string& name) {
  load.stop();
  std::printf("cluster %s: load %s\n", name.c_str(), load.summary().c_str());
  check_load(load);
  check_fencing(checker);
  check_holds(cluster, checker);
  for (Watcher* w : watchers) {
    REQUIRE(w->wait_revision(checker.max_revision(), 15000ms));
    w->stop();
    check_watch(*w, checker);
  }
}

}  // namespace cluster
