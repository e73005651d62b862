// `tenure run`, `hold` and `watch` with a cluster's sockets (docs/cli.md): when the node they are
// connected to dies, run and hold renew through another node and keep their tenure (§10: a lease
// granted through a lost node stays held; its holder's next renew through another node
// succeeds), and watch resumes on another node by revision, without gap or repeat.
#include <catch2/catch.hpp>
#include <future>
#include <set>
#include <sstream>

#include "tests/cluster/checks.hpp"
#include "tests/e2e/e2e.hpp"

namespace cluster {
namespace {

using e2e::Json;

std::string joined(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& path : paths) out += (out.empty() ? "" : ",") + path;
  return out;
}

std::future<e2e::ProcessResult> shell(const std::string& script) {
  return std::async(std::launch::async, [script] {
    e2e::ProcessOptions options;
    options.timeout = 120000ms;
    return e2e::run_process({"/bin/sh", "-c", script}, options);
  });
}

// The live lease on key as a running node tells it, waiting (bounded) while the key is free or a
// failover makes the node wait; null if none comes.
Json lease_of(Cluster& cluster, const std::string& key) {
  Json lease;
  e2e::wait_until(
      [&] {
        auto c = cluster.connect(running_node(cluster));
        Json info = c.call(e2e::get_req(key));
        lease = info["lease"];
        return info["status"] == "ok" && !lease.is_null();
      },
      cluster.failover_bound() + 5000ms);
  return lease;
}

TEST_CASE("tenure run, hold and watch go on through the death of their node", CLUSTER_TAG "[cli]") {
  Cluster cluster;
  // The writer: the keys' slots move to another node with the connections.
  const int victim = *cluster.owner_of("cli/");
  const std::string hold_key = cluster.key_owned_by(victim, "cli/hold");
  const std::string run_key = cluster.key_owned_by(victim, "cli/run");
  e2e::TempDir t;
  const std::string stop = t.path() + "/stop";
  // Renewed every 3 s: a failover (at most 3 s here) fits between a renewal and the deadline.
  const std::string tenure =
      e2e::tenure_cli_path() + " --socket " + joined(cluster.sockets_from(victim)) + " ";
  const std::string until_stop = "until [ -e " + stop + " ]; do sleep 0.1; done";
  auto hold = shell(tenure + "hold " + hold_key + " --ttl 9s < /dev/null > " + t.path() +
                    "/held & p=$!; " + until_stop + "; kill $p; wait $p");
  auto run = shell(tenure + "run " + run_key + " --ttl 9s -- sh -c 'echo $TENURE_TOKEN > " +
                   t.path() + "/token; " + until_stop + "'");
  // Every event of the cluster, from the revision after its `watching` reply.
  const std::string watched = t.path() + "/watched";
  const std::string stop_watch = t.path() + "/stop-watch";
  auto watch = shell(tenure + "--json watch > " + watched + " & p=$!; until [ -e " + stop_watch +
                     " ]; do sleep 0.1; done; kill $p; wait $p");
  auto watched_lines = [&] {
    std::vector<Json> out;
    std::istringstream lines(e2e::read_file(watched));
    for (std::string line; std::getline(lines, line);) {
      auto j = Json::parse(line);
      if (j) out.push_back(*j);
    }
    return out;
  };
  Json held = lease_of(cluster, hold_key);
  Json ran = lease_of(cluster, run_key);
  REQUIRE(!held.is_null());
  REQUIRE(!ran.is_null());
  REQUIRE(e2e::wait_until(
      [&] { return e2e::read_file(t.path() + "/token") == ran["token"].dump() + "\n"; }, 10000ms));
  REQUIRE(e2e::wait_until([&] { return !watched_lines().empty(); }, 10000ms));

  cluster.kill9(victim);
  // Past the deadlines the leases had when their node died: only renewals through another node
  // can have kept them.
  const std::int64_t last_deadline =
      std::max(*e2e::time_ms(held["expires_at"]), *e2e::time_ms(ran["expires_at"]));
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::max<std::int64_t>(last_deadline - e2e::wall_now_ms(), 0)) +
      1000ms);
  for (const auto& [key, before] : {std::pair{hold_key, held}, std::pair{run_key, ran}}) {
    Json now = lease_of(cluster, key);
    INFO(key << " before: " << before.dump() << ", now: " << now.dump());
    CHECK(now["token"].i64() == before["token"].i64());
    CHECK(now["owner"] == before["owner"].str());
    CHECK(e2e::time_ms(now["expires_at"]).value_or(0) > *e2e::time_ms(before["expires_at"]));
  }

  // Both end as usual: released by their own tenure.
  e2e::run_process({"/usr/bin/touch", stop});
  for (auto* process : {&hold, &run}) {
    e2e::ProcessResult r = process->get();
    INFO(r.describe());
    CHECK(r.exited);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("lost") == std::string::npos);
  }
  // Both releases came after the kill, through another node; the watch there sees them.
  auto released = [&] {
    std::set<std::string> keys;
    for (const Json& line : watched_lines()) {
      if (line["event"] == "released") keys.insert(line["key"].str());
    }
    return keys;
  };
  CHECK(e2e::wait_until(
      [&] {
        return released() == std::set<std::string>{hold_key, run_key};
      },
      10000ms));
  e2e::run_process({"/usr/bin/touch", stop_watch});
  e2e::ProcessResult watched_run = watch.get();
  INFO(watched_run.describe() << e2e::read_file(watched));
  std::vector<Json> lines = watched_lines();
  REQUIRE(!lines.empty());
  REQUIRE(lines[0]["status"] == "watching");
  // The revision is +1 per event cluster-wide: each event once, none missing.
  for (std::size_t i = 1; i < lines.size(); ++i) {
    CHECK(lines[i]["revision"].i64() == lines[0]["revision"].i64() + static_cast<std::int64_t>(i));
  }
  CHECK(e2e::read_file(t.path() + "/held")
            .rfind("holding " + hold_key + ", token " + held["token"].dump(), 0) == 0);
  auto c = cluster.connect(running_node(cluster));
  for (const auto& [key, before] : {std::pair{hold_key, held}, std::pair{run_key, ran}}) {
    auto history = e2e::full_history(c, key);
    REQUIRE(!history.empty());
    CHECK(history[0]["token"].i64() == before["token"].i64());
    CHECK(history[0]["end"] == "released");
  }
}

}  // namespace
}  // namespace cluster
