// The `tenure` command line against a real tenured (§9): exit codes, --json, `tenure run`.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <set>
#include <sstream>

#include "tests/e2e/e2e.hpp"
#include "tests/e2e/unavailable_node.hpp"

using namespace e2e;

namespace {

ProcessResult cli(const Daemon& d, std::vector<std::string> args, ProcessOptions o = {}) {
  std::vector<std::string> argv{tenure_cli_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  bool has_socket = false;
  for (const auto& e : o.set_env) has_socket = has_socket || e.rfind("TENURE_SOCKET=", 0) == 0;
  if (!has_socket) o.set_env.push_back("TENURE_SOCKET=" + d.socket_path());
  o.unset_env.push_back("TENURE_OWNER");
  return run_process(argv, o);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The lines of `file` that are JSON, in order.
std::vector<Json> json_lines(const std::string& file) {
  std::vector<Json> found;
  std::istringstream lines(read_file(file));
  for (std::string line; std::getline(lines, line);) {
    if (auto j = Json::parse(line)) found.push_back(*j);
  }
  return found;
}

// The one JSON line that `tenure --json` printed.
Json json_output(const ProcessResult& r) {
  std::string out = trim(r.out);
  INFO(r.describe());
  REQUIRE(out.find('\n') == std::string::npos);
  auto j = Json::parse(out);
  REQUIRE(j.has_value());
  return *j;
}

}  // namespace

TEST_CASE("tenure exit codes: 0 success; 4 held/not_holder; 1 errors", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  auto expect = [&](std::vector<std::string> args, int code) {
    ProcessResult r = cli(d, args);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    INFO("tenure" << cmd << ": " << r.describe());
    CHECK_FALSE(r.timed_out);
    CHECK(r.exited);
    CHECK(r.exit_code == code);
    if (code == 1) CHECK_FALSE(r.err.empty());
    return r;
  };
  expect({"ping"}, 0);
  expect({"acquire", "cli/k", "--owner", "alice", "--ttl", "30s"}, 0);
  check_lease_object(live_lease(c, "cli/k"), "cli/k", "alice", 1, 30000);
  expect({"acquire", "cli/k", "--owner", "alice", "--ttl", "30s"}, 0);  // idempotent
  expect({"acquire", "cli/k", "--owner", "bob"}, 4);                    // held
  expect({"renew", "cli/k", "--owner", "bob"}, 4);                      // not_holder
  expect({"release", "cli/k", "--owner", "bob"}, 4);                    // not_holder
  expect({"release", "cli/k", "--owner", "alice", "--token", "9"}, 4);  // token_mismatch
  expect({"check", "cli/k", "--token", "1"}, 0);
  expect({"check", "cli/k", "--token", "2"}, 4);
  expect({"renew", "cli/k", "--owner", "alice", "--ttl", "1m"}, 0);
  CHECK(live_lease(c, "cli/k")["ttl_ms"] == 60000);
  expect({"keepalive", "--owner", "alice"}, 0);
  expect({"get", "cli/k"}, 0);
  expect({"list"}, 0);
  expect({"history", "cli/k"}, 0);
  expect({"stats"}, 0);
  expect({"release", "cli/k", "--owner", "alice"}, 0);
  CHECK(live_lease(c, "cli/k") == nullptr);
  expect({"release", "cli/k", "--owner", "alice"}, 0);  // idempotent release is success
  expect({"acquire", "cli/r", "--owner", "alice", "--ttl", "30s"}, 0);
  expect({"revoke", "cli/r"}, 0);
  CHECK(live_lease(c, "cli/r") == nullptr);

  // Bad arguments.
  expect({}, 1);
  expect({"frobnicate"}, 1);
  expect({"acquire"}, 1);
  expect({"acquire", "cli/x", "--ttl", "soon"}, 1);
  expect({"check", "cli/x"}, 1);
  // Numbers that do not fit 64 bits unsigned are refused, not wrapped around or cut down.
  expect({"check", "cli/x", "--token", "-1"}, 1);
  expect({"release", "cli/x", "--owner", "alice", "--token", "18446744073709551616"}, 1);
  expect({"list", "--limit", "-1"}, 1);
  expect({"history", "cli/k", "--limit", "-3"}, 1);
  expect({"history", "cli/k", "--before", "2x"}, 1);
  expect({"watch", "--from", "-1"}, 1);
  // An error reply (an owner longer than 128 bytes) is exit 1.
  expect({"acquire", "cli/x", "--owner", std::string(200, 'o')}, 1);
  CHECK(c.call(get_req("cli/x"))["last_token"] == 0);
}

TEST_CASE("tenure list --after and history --before start where a page's next says", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  for (const char* key : {"pg/a", "pg/b", "pg/c"}) {
    REQUIRE(c.call(acquire_req(key, "o", "\"ttl_ms\":60000"))["status"] == "acquired");
  }
  for (int i = 0; i < 3; ++i) {
    REQUIRE(c.call(acquire_req("pg/h", "o", "\"ttl_ms\":60000"))["status"] == "acquired");
    REQUIRE(c.call(release_req("pg/h", "o"))["status"] == "released");
  }
  Json page = json_output(cli(d, {"--json", "list", "pg/", "--limit", "1", "--after", "pg/a"}));
  REQUIRE(page["leases"].size() == 1);
  CHECK(page["leases"][0]["key"] == "pg/b");
  CHECK(page["next"] == "pg/b");
  ProcessResult rest = cli(d, {"list", "pg/", "--after", "pg/b"});
  INFO(rest.describe());
  CHECK(rest.exit_code == 0);
  CHECK(rest.out.find("pg/c") != std::string::npos);
  CHECK(rest.out.find("pg/b") == std::string::npos);
  Json older = json_output(cli(d, {"--json", "history", "pg/h", "--limit", "1", "--before", "3"}));
  REQUIRE(older["tenures"].size() == 1);
  CHECK(older["tenures"][0]["token"] == 2);
  CHECK(older["next"] == 2);
}

TEST_CASE("tenure exits 1 and names the socket when tenured is unreachable", "[e2e][cli]") {
  Daemon d;
  TempDir t;
  std::string missing = t.path() + "/no-such.sock";
  ProcessOptions o;
  o.set_env = {"TENURE_SOCKET=" + missing};
  ProcessResult r = cli(d, {"ping"}, o);
  INFO(r.describe());
  CHECK(r.exited);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(missing) != std::string::npos);
  // --socket selects the daemon too, and wins over the environment.
  r = cli(d, {"--socket", d.socket_path(), "ping"}, o);
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  // A stopped daemon: unreachable as well.
  REQUIRE(d.terminate().exit_code == 0);
  r = cli(d, {"get", "k"});
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK_FALSE(r.err.empty());
}

TEST_CASE("tenure --socket takes a cluster's sockets and uses the first that accepts",
          "[e2e][cli]") {
  Daemon d;
  TempDir t;
  std::string dead = t.path() + "/dead.sock", other = t.path() + "/other.sock";
  ProcessResult r = cli(d, {"--socket", dead + "," + d.socket_path(), "acquire", "k"});
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  r = cli(d, {"--socket", d.socket_path() + "," + dead, "get", "k"});
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  // None accepts: each is named.
  r = cli(d, {"--socket", dead + "," + other, "ping"});
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(dead) != std::string::npos);
  CHECK(r.err.find(other) != std::string::npos);
  r = cli(d, {"--socket", dead + ",", "ping"});
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("empty socket path") != std::string::npos);
}

TEST_CASE("tenure without a socket of its own names the per-user and the system one",
          "[e2e][cli]") {
  if (std::filesystem::exists("/run/tenure/tenured.sock")) {
    WARN("the system service's socket exists here: the fallback error cannot be shown");
    return;
  }
  TempDir home;
  ProcessOptions o;
  o.set_env = {"HOME=" + home.path()};
  o.unset_env = {"TENURE_SOCKET", "XDG_STATE_HOME"};
  ProcessResult r = run_process({tenure_cli_path(), "ping"}, o);
  INFO(r.describe());
  CHECK(r.exit_code == 1);
  CHECK(r.err == "tenure: cannot connect to " + home.path() +
                     "/.local/state/tenure/tenured.sock: no such file; is tenured running? "
                     "(also looked for /run/tenure/tenured.sock)\n");
}

TEST_CASE("tenure --json prints the server's reply verbatim", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  ProcessResult r = cli(d, {"--json", "acquire", "cli/j", "--owner", "alice", "--ttl", "30s"});
  REQUIRE(r.exit_code == 0);
  Json acq = json_output(r);
  CHECK(acq["status"] == "acquired");
  CHECK(acq["fresh"] == true);
  check_lease_object(acq, "cli/j", "alice", 1, 30000);
  CHECK(acq["revision"].is_integer());

  // The same request over the socket gives the same reply, field for field (bar the id).
  r = cli(d, {"--json", "get", "cli/j"});
  REQUIRE(r.exit_code == 0);
  Json via_cli = json_output(r);
  Json direct = c.call(get_req("cli/j"));
  CHECK(via_cli["status"] == "ok");
  for (const auto& name : direct.keys()) {
    if (name == "id") continue;
    INFO("field " << name << ": cli " << via_cli[name].dump() << ", socket "
                  << direct[name].dump());
    CHECK(via_cli[name].same_as(direct[name]));
  }
  for (const auto& name : via_cli.keys()) {
    if (name != "id") CHECK(direct.has(name));
  }

  r = cli(d, {"--json", "acquire", "cli/j", "--owner", "bob"});
  CHECK(r.exit_code == 4);
  Json held = json_output(r);
  CHECK(held["status"] == "held");
  CHECK(held["holder"] == "alice");
  CHECK(held["token"] == 1);
  CHECK(held["expires_at"] == acq["expires_at"].str());

  r = cli(d, {"--json", "release", "cli/j", "--owner", "alice"});
  CHECK(r.exit_code == 0);
  Json rel = json_output(r);
  CHECK(rel["status"] == "released");
  CHECK(rel["token"] == 1);
  CHECK(rel["key"] == "cli/j");

  r = cli(d, {"--json", "ping"});
  CHECK(r.exit_code == 0);
  CHECK(json_output(r)["status"] == "pong");
}

TEST_CASE("tenure run passes the token to the command and releases on exit", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  TempDir t;
  std::string file = t.path() + "/out";
  std::string script = "echo $TENURE_TOKEN > " + file + "; echo $TENURE_KEY >> " + file +
                       "; echo $TENURE_OWNER >> " + file;

  ProcessResult r = cli(d, {"run", "cli/run", "--ttl", "30s", "--", "sh", "-c", script});
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  std::string text = read_file(file);
  auto nl1 = text.find('\n');
  auto nl2 = text.find('\n', nl1 + 1);
  REQUIRE(nl2 != std::string::npos);
  CHECK(text.substr(0, nl1) == "1");
  CHECK(text.substr(nl1 + 1, nl2 - nl1 - 1) == "cli/run");
  CHECK(trim(text.substr(nl2 + 1)).empty());  // no TENURE_OWNER for the command

  Json g = c.call(get_req("cli/run"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 1);
  auto h = full_history(c, "cli/run");
  REQUIRE(h.size() == 1);
  // user@host:pid-XXXXXXXX: readable, and unique to the invocation.
  std::string owner = h[0]["owner"].str();
  CHECK(owner.find('@') != std::string::npos);
  CHECK(owner.find(':') != std::string::npos);
  CHECK(h[0]["end"] == "released");

  // The next run gets the next token. --owner is only a prefix of the run's own owner, and the
  // command never sees the owner as TENURE_OWNER.
  r = cli(d, {"run", "cli/run", "--owner", "runner", "--ttl", "30s", "--", "sh", "-c", script});
  REQUIRE(r.exit_code == 0);
  CHECK(read_file(file) == "2\ncli/run\n\n");
  CHECK(live_lease(c, "cli/run") == nullptr);
  h = full_history(c, "cli/run");
  REQUIRE(h.size() == 2);
  CHECK(h[0]["owner"].str().rfind("runner-", 0) == 0);
  CHECK(h[0]["owner"].str().size() == std::string("runner-").size() + 8);
}

TEST_CASE("tenure run passes the command's exit status through", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  ProcessResult r = cli(d, {"run", "cli/st", "--ttl", "30s", "--", "sh", "-c", "exit 3"});
  INFO(r.describe());
  CHECK(r.exited);
  CHECK(r.exit_code == 3);
  CHECK(live_lease(c, "cli/st") == nullptr);
  CHECK(full_history(c, "cli/st")[0]["end"] == "released");
}

TEST_CASE("tenure run --no-wait or a spent --wait exits 4 without running the command",
          "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("cli/busy", "someone", "\"ttl_ms\":60000"))["status"] == "acquired");
  TempDir t;
  std::string file = t.path() + "/ran";
  for (std::vector<std::string> wait :
       {std::vector<std::string>{"--no-wait"}, {"-n"}, {"--wait", "300ms"}}) {
    std::vector<std::string> args{"run", "cli/busy", "--ttl", "30s"};
    args.insert(args.end(), wait.begin(), wait.end());
    args.insert(args.end(), {"--", "sh", "-c", "touch " + file});
    ProcessResult r = cli(d, args);
    INFO(wait[0] << ": " << r.describe());
    CHECK(r.exited);
    CHECK(r.exit_code == 4);
    CHECK(r.err.find("held by someone, token 1") != std::string::npos);
    struct stat st {};
    CHECK(::stat(file.c_str(), &st) != 0);
    CHECK(live_lease(c, "cli/busy")["owner"] == "someone");
  }
}

TEST_CASE("tenure run keeps renewing a short lease while the command runs", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  TempDir t;
  std::string file = t.path() + "/out";
  ProcessResult r = cli(d, {"run", "cli/long", "--ttl", "1500ms", "--", "sh", "-c",
                            "sleep 3.5; echo $TENURE_TOKEN > " + file});
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(read_file(file) == "1\n");
  auto h = full_history(c, "cli/long");
  REQUIRE(h.size() == 1);
  CHECK(h[0]["end"] == "released");
}

namespace {

std::future<ProcessResult> cli_async(const Daemon& d, std::vector<std::string> args,
                                     ProcessOptions o = {}) {
  return std::async(std::launch::async, [&d, args, o] { return cli(d, args, o); });
}

ProcessOptions socket_env(const Daemon& d) {
  ProcessOptions o;
  o.set_env = {"TENURE_SOCKET=" + d.socket_path()};
  return o;
}

ProcessOptions with_owner(const std::string& owner) {
  ProcessOptions o;
  o.set_env = {"TENURE_OWNER=" + owner};
  return o;
}

}  // namespace

TEST_CASE("concurrent tenure runs on one key never overlap, even with TENURE_OWNER shared",
          "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  TempDir t;
  std::string file = t.path() + "/spans";
  // Each command notes when it starts and ends, by its own clock reading.
  std::string script = "echo \"$$ start $(date +%s%N)\" >> " + file +
                       "; sleep 0.3; echo \"$$ end $(date +%s%N)\" >> " + file;
  std::vector<std::future<ProcessResult>> runs;
  for (int i = 0; i < 3; ++i) {
    runs.push_back(cli_async(d, {"run", "ov/k", "--ttl", "30s", "--", "sh", "-c", script},
                             with_owner("shared")));
  }
  for (auto& run : runs) {
    ProcessResult r = run.get();
    INFO(r.describe());
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("not holder") == std::string::npos);
  }
  std::map<std::string, std::pair<long long, long long>> spans;
  std::istringstream lines(read_file(file));
  std::string pid, what;
  long long ns = 0;
  while (lines >> pid >> what >> ns) (what == "start" ? spans[pid].first : spans[pid].second) = ns;
  REQUIRE(spans.size() == 3);
  std::vector<std::pair<long long, long long>> sorted;
  for (const auto& [p, span] : spans) sorted.push_back(span);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i + 1 < sorted.size(); ++i) {
    INFO("command " << i << " ended at " << sorted[i].second << ", the next started at "
                    << sorted[i + 1].first);
    CHECK(sorted[i].second < sorted[i + 1].first);
  }
  // Three tenures of three distinct owners, each released by its own run.
  auto h = full_history(c, "ov/k");
  REQUIRE(h.size() == 3);
  std::set<std::string> owners;
  for (const Json& tenure : h) {
    CHECK(tenure["end"] == "released");
    owners.insert(tenure["owner"].str());
  }
  CHECK(owners.size() == 3);
  CHECK_FALSE(owners.contains("shared"));
}

TEST_CASE("tenure run waits for a held key by default, saying for whom", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("wait/k", "someone", "\"ttl_ms\":60000"))["status"] == "acquired");
  TempDir t;
  std::string file = t.path() + "/token";
  // A bare --wait means the same: no limit.
  for (std::vector<std::string> wait : {std::vector<std::string>{}, {"--wait"}}) {
    std::vector<std::string> args{"run", "wait/k"};
    args.insert(args.end(), wait.begin(), wait.end());
    args.insert(args.end(), {"--", "sh", "-c", "echo $TENURE_TOKEN > " + file});
    auto run = cli_async(d, args);
    REQUIRE(wait_waiters(c, "wait/k", 1));
    Json lease = live_lease(c, "wait/k");
    REQUIRE(c.call(release_req("wait/k", lease["owner"].str()))["status"] == "released");
    ProcessResult r = run.get();
    INFO(r.describe());
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("waiting for wait/k (held by " + lease["owner"].str() + ", token " +
                     lease["token"].dump() + ")") != std::string::npos);
    CHECK(read_file(file) == std::to_string(lease["token"].i64() + 1) + "\n");
    // Held again for the next round.
    REQUIRE(c.call(acquire_req("wait/k", "someone", "\"ttl_ms\":60000"))["status"] == "acquired");
  }
}

TEST_CASE("a nested tenure run on the same key fails with --no-wait or waits", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  TempDir t;
  std::string marker = t.path() + "/inner-ran";
  std::string inner = tenure_cli_path() + " run nest/k --no-wait -- touch " + marker;
  ProcessResult r = cli(d, {"run", "nest/k", "--", "sh", "-c", inner}, with_owner("me"));
  INFO(r.describe());
  CHECK(r.exit_code == 4);  // the inner run's status, passed through
  struct stat st {};
  CHECK(::stat(marker.c_str(), &st) != 0);
  // Waiting, the inner run gets the key only after the outer one released it: here its wait runs
  // out first.
  inner = tenure_cli_path() + " run nest/k --wait 300ms -- touch " + marker;
  r = cli(d, {"run", "nest/k", "--", "sh", "-c", inner}, with_owner("me"));
  INFO(r.describe());
  CHECK(r.exit_code == 4);
  CHECK(::stat(marker.c_str(), &st) != 0);
  CHECK(live_lease(c, "nest/k") == nullptr);
  CHECK(full_history(c, "nest/k").size() == 2);
}

TEST_CASE("the README tour: a run never joins or releases the user's own lease", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  ProcessOptions alice = with_owner("alice");
  REQUIRE(cli(d, {"acquire", "tour/pr", "--ttl", "15m"}, alice).exit_code == 0);
  ProcessResult r = cli(d, {"run", "tour/pr", "--wait", "300ms", "--", "true"}, alice);
  INFO(r.describe());
  CHECK(r.exit_code == 4);
  // Nor does the command of a run see the user's owner.
  r = cli(d, {"run", "tour/other", "--", "sh", "-c", "echo \"[$TENURE_OWNER]\""}, alice);
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(r.out == "[]\n");
  Json lease = live_lease(c, "tour/pr");
  CHECK(lease["owner"] == "alice");
  CHECK(lease["token"] == 1);
  CHECK(lease["ttl_ms"] == 900000);
  r = cli(d, {"release", "tour/pr"}, alice);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("token 1") != std::string::npos);
}

TEST_CASE("tenure run stops the command with SIGTERM and exits 5 when the lease is revoked",
          "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  TempDir t;
  std::string marker = t.path() + "/term";
  std::string trapped = t.path() + "/trapped";
  std::string script =
      "trap 'echo TERM > " + marker + "; exit 0' TERM; : > " + trapped + "; sleep 20 & wait";
  auto run = cli_async(d, {"run", "rv/k", "--ttl", "30s", "--", "sh", "-c", script});
  // The command runs once the lease is held, and is revoked only once its trap is in place.
  REQUIRE(wait_until([&] { return std::filesystem::exists(trapped); }, 10000ms));
  REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"rv/k\"")["status"] == "revoked");
  ProcessResult r = run.get();
  INFO(r.describe());
  CHECK(r.exited);
  CHECK(r.exit_code == 5);
  CHECK(read_file(marker) == "TERM\n");
  CHECK(r.err.find("lost the lease on rv/k, token 1 (revoked)") != std::string::npos);
  // Nothing released after the loss: the revoke ended token 1, and no later tenure exists.
  CHECK(c.call(get_req("rv/k"))["last_token"] == 1);
}

TEST_CASE("tenure hold keeps the key until SIGTERM or the end of its input", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  TempDir t;
  std::string tenure = tenure_cli_path();
  // In the background (stdin /dev/null, which does not end the hold) until SIGTERM.
  std::string script = tenure + " hold hold/k > " + t.path() + "/out & p=$!; until grep -q " +
                       "holding " + t.path() + "/out; do sleep 0.05; done; " + tenure +
                       " --json get hold/k > " + t.path() + "/get; kill $p; wait $p";
  ProcessResult r = run_process({"/bin/sh", "-c", script}, socket_env(d));
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(read_file(t.path() + "/out").rfind("holding hold/k, token 1", 0) == 0);
  auto got = Json::parse(trim(read_file(t.path() + "/get")));
  REQUIRE(got);
  CHECK((*got)["lease"]["token"] == 1);
  CHECK(live_lease(c, "hold/k") == nullptr);
  CHECK(full_history(c, "hold/k")[0]["end"] == "released");

  // Input that ends after a while: held meanwhile, released then.
  r = run_process({"/bin/sh", "-c", "sleep 0.5 | " + tenure + " hold hold/k"}, socket_env(d));
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("holding hold/k, token 2", 0) == 0);
  auto h = full_history(c, "hold/k");
  REQUIRE(h.size() == 2);
  CHECK(h[0]["end"] == "released");
}

TEST_CASE("tenure hold with several sockets takes a lease that outlives its connection",
          "[e2e][cli]") {
  // Two single nodes stand for a cluster's: the lease is on the first, the second knows nothing.
  Daemon a;
  Daemon b;
  auto c = a.connect();
  TempDir t;
  std::string tenure = tenure_cli_path() + " --socket " + a.socket_path() + "," + b.socket_path();
  auto held_file = [&](const std::string& key) {
    return t.path() + "/" + std::to_string(std::hash<std::string>()(key));
  };
  auto hold_then = [&](const std::string& key, const std::string& then) {
    std::string held = held_file(key);
    return run_process({"/bin/sh", "-c",
                        tenure + " hold " + key + " < /dev/null > " + held +
                            " & p=$!; until grep " + "-q holding " + held +
                            "; do sleep 0.05; done; " + then});
  };

  // Not connection-bound: a tenure killed -9 leaves its key held, as the TTL (1m unless --ttl)
  // says; it is not bound to one node's connection, so that it can outlive the node.
  ProcessResult r = hold_then("many/k", "kill -9 $p; wait $p");
  INFO(r.describe());
  Json lease = live_lease(c, "many/k");
  CHECK(lease["token"] == 1);
  CHECK(lease["ttl_ms"] == 60000);

  // An acquire that a stalled node leaves unanswered (past --timeout) is asked again of the next
  // node, with the same owner.
  auto b_client = b.connect();
  ::kill(a.pid(), SIGSTOP);
  r = run_process({"/bin/sh", "-c", tenure + " --timeout 1s run many/retry --ttl 3s -- true"});
  ::kill(a.pid(), SIGCONT);
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  auto retried = full_history(b_client, "many/retry");
  REQUIRE(retried.size() == 1);
  CHECK(retried[0]["end"] == "released");

  // When its node dies, renewals go to the next one; that one refuses (the lease is not there),
  // so the tenure is lost: exit 5.
  auto hold = std::async(std::launch::async, [&] { return hold_then("many/lost", "wait $p"); });
  // Not only committed on the first node but known to `hold`: a node killed before its reply
  // reaches `hold` leaves the acquire in doubt, and `hold` rightly asks the next node again.
  REQUIRE(wait_until(
      [&] { return read_file(held_file("many/lost")).find("holding") != std::string::npos; },
      10000ms));
  REQUIRE(!live_lease(c, "many/lost").is_null());
  a.kill9();
  r = hold.get();
  INFO(r.describe());
  CHECK(r.exit_code == 5);
  CHECK(r.err.find("lost the lease on many/lost, token 1") != std::string::npos);
}

TEST_CASE("tenure explains usage mistakes", "[e2e][cli]") {
  Daemon d;
  auto expect_error = [&](std::vector<std::string> args, const std::string& says) {
    ProcessResult r = cli(d, args);
    INFO(r.describe());
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(says) != std::string::npos);
  };
  expect_error({"aquire", "k"}, "unknown subcommand 'aquire' (did you mean acquire?)");
  expect_error({"--socket", "x", "relase", "k"}, "(did you mean release?)");
  expect_error({"run", "job/a", "ls", "-d", "/"}, "put -- before the command");
  expect_error({"acquire", "k", "--ttl", "0"}, "--ttl: must be more than 0");
  expect_error({"acquire", "k", "--ttl", "5"}, "'5' has no unit; write 5s, 5m or 5ms");
  expect_error({"acquire", "k", "--ttl", "5min"}, "1h30m");
  expect_error({"--socket", "/etc/passwd", "ping"}, "/etc/passwd: it is not a socket");
  ProcessResult r = cli(d, {"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("tenure 0.", 0) == 0);
  r = run_process({tenured_path(), "--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("tenured 0.", 0) == 0);
  r = run_process({tenured_path(), "--min-ttl", "5min"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("'5min' is not a duration; write e.g.") != std::string::npos);
}

TEST_CASE("tenure durations, clamped TTLs and a re-acquire in words", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  ProcessResult r = cli(d, {"acquire", "du/k", "--owner", "alice", "--ttl", "1m30s"});
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK(live_lease(c, "du/k")["ttl_ms"] == 90000);
  CHECK(r.err.find("warning") == std::string::npos);
  r = cli(d, {"acquire", "du/k", "--owner", "alice", "--ttl", "1.5h"});
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("du/k was already yours (alice), token 1; renewed", 0) == 0);
  CHECK(live_lease(c, "du/k")["ttl_ms"] == 5400000);
  r = cli(d, {"acquire", "du/short", "--owner", "alice", "--ttl", "1ms"});
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("warning: --ttl 1ms is outside the server's limits; the lease has 10ms") !=
        std::string::npos);
}

TEST_CASE("tenure shows the server's refusal of a connection, not a write error", "[e2e][cli]") {
  Daemon d({"--max-connections", "2"});
  auto c = d.connect();
  // The harness's readiness probe counts until the server has seen it close: wait for that,
  // then take the last slot.
  REQUIRE(wait_until([&] { return c.call("\"op\":\"stats\"")["connections"] == 1; }, 5000ms));
  auto last = d.connect();
  REQUIRE(last.call("\"op\":\"ping\"")["status"] == "pong");
  for (int i = 0; i < 5; ++i) {
    ProcessResult r = cli(d, {"ping"});
    INFO(r.describe());
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("too_many_requests") != std::string::npos);
  }
}

TEST_CASE("tenure get shows waiters and lock-delay", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("gw/k", "alice", "\"ttl_ms\":60000"))["status"] == "acquired");
  auto waiter = d.connect();
  waiter.send("\"op\":\"acquire\",\"key\":\"gw/k\",\"owner\":\"bob\",\"wait_ms\":60000");
  REQUIRE(wait_waiters(c, "gw/k", 1));
  ProcessResult r = cli(d, {"get", "gw/k"});
  INFO(r.describe());
  CHECK(r.out.find("held by alice, token 1") != std::string::npos);
  CHECK(r.out.find("1 waiter") != std::string::npos);
  if (c.call(get_req("gw/k")).has("waiting")) CHECK(r.out.find("1. bob") != std::string::npos);

  REQUIRE(c.call(acquire_req("gw/d", "alice",
                             "\"ttl_ms\":60000,\"lock_delay_ms\":30000"))["status"] == "acquired");
  REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"gw/d\"")["status"] == "revoked");
  r = cli(d, {"get", "gw/d"});
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  if (c.call(get_req("gw/d")).has("lock_delay_until")) {
    CHECK(r.out.find("gw/d is in lock-delay after token 1 was lost") != std::string::npos);
  } else {
    WARN("the server does not report lock_delay_until yet");
  }
}

TEST_CASE("bash completion offers subcommands, options and live keys", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("comp/alpha", "a", "\"ttl_ms\":60000"))["status"] == "acquired");
  REQUIRE(c.call(acquire_req("comp/beta", "a", "\"ttl_ms\":60000"))["status"] == "acquired");
  std::string cli_dir = tenure_cli_path().substr(0, tenure_cli_path().rfind('/'));
  // What the completion function proposes for the words typed so far (the last one partial).
  auto complete = [&](const std::string& typed) {
    std::string script = "source " TENURE_SOURCE_DIR "/packaging/completion/tenure.bash; " +
                         ("COMP_WORDS=(" + typed + "); ") +
                         "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tenure; "
                         "printf '%s\\n' \"${COMPREPLY[@]}\" | sort | tr '\\n' ' '";
    ProcessOptions o = socket_env(d);
    o.set_env.push_back("PATH=" + cli_dir + ":/usr/bin:/bin");
    ProcessResult r = run_process({"/bin/bash", "-c", script}, o);
    INFO(r.describe());
    CHECK(r.exit_code == 0);
    return r.out;
  };
  CHECK(complete("tenure ac") == "acquire ");
  CHECK(complete("tenure h") == "history hold ");
  CHECK(complete("tenure run k --no") == "--no-wait ");
  CHECK(complete("tenure get comp/") == "comp/alpha comp/beta ");
  CHECK(complete("tenure --socket x release comp/b") == "comp/beta ");
  CHECK(complete("tenure acquire k --ttl 1h") == "1h 1h30m ");
  CHECK(complete("tenure ad") == "admin ");
  CHECK(complete("tenure admin b") == "backup ");
}

TEST_CASE("cmake --install puts the programs, man pages and completion in place", "[e2e][cli]") {
  TempDir t;
  ProcessResult r = run_process({CMAKE_COMMAND_PATH, "--install", TENURE_BUILD_DIR, "--component",
                                 "cli", "--prefix", t.path() + "/usr"});
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  struct stat st {};
  for (std::string path :
       {"/usr/bin/tenure", "/usr/bin/tenured", "/usr/share/bash-completion/completions/tenure",
        "/usr/share/zsh/vendor-completions/_tenure"}) {
    INFO(path);
    CHECK(::stat((t.path() + path).c_str(), &st) == 0);
  }
  r = run_process({t.path() + "/usr/bin/tenure", "--version"});
  CHECK(r.out.rfind("tenure ", 0) == 0);
  if (run_process({"/bin/sh", "-c", "command -v help2man"}).exit_code != 0) {
    WARN("help2man is not installed: no man pages to check");
    return;
  }
  std::string page = read_file(t.path() + "/usr/share/man/man1/tenure.1");
  CHECK(page.find(".SS run") != std::string::npos);
  CHECK(page.find("--no-wait") != std::string::npos);
  CHECK(read_file(t.path() + "/usr/share/man/man8/tenured.8").find("\\-\\-data\\-dir") !=
        std::string::npos);
}

TEST_CASE("tenure revoke --reason: history and watch show who revoked and why", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("rr/k", "alice", "\"ttl_ms\":60000"))["status"] == "acquired");
  ProcessResult r = cli(d, {"revoke", "rr/k", "--reason", "stuck deploy"});
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  Json record = full_history(c, "rr/k")[0];
  if (!record.has("revoked_by")) {
    WARN("the server does not record revoked_by yet");
    return;
  }
  CHECK(record["reason"] == "stuck deploy");
  std::string note = " (by " + record["revoked_by"].str() + ": stuck deploy)";
  r = cli(d, {"history", "rr/k"});
  INFO(r.describe());
  CHECK(r.out.find("revoked" + note) != std::string::npos);
  // watch replays the revoked event from the ledger; it runs until stopped.
  ProcessOptions o;
  o.timeout = 2000ms;
  r = cli(d, {"watch", "--key", "rr/k", "--from", "1"}, o);
  INFO(r.describe());
  CHECK(r.out.find("revoked rr/k by alice, token 1" + note) != std::string::npos);
}

TEST_CASE("tenure watch on one socket ends when its daemon goes", "[e2e][cli]") {
  Daemon d;
  TempDir t;
  const std::string out = t.path() + "/out";
  // --timeout far above what the test waits: the watch must not wait for it to end.
  auto watch = std::async(std::launch::async, [&] {
    return run_process(
        {"/bin/sh", "-c",
         tenure_cli_path() + " --timeout 300s --socket " + d.socket_path() + " watch 2> " + out});
  });
  REQUIRE(
      wait_until([&] { return read_file(out).find("watching") != std::string::npos; }, 10000ms));
  d.kill9();
  REQUIRE(watch.wait_for(60s) == std::future_status::ready);
  ProcessResult r = watch.get();
  INFO(r.describe() << read_file(out));
  CHECK(r.exit_code == 1);
  CHECK(read_file(out).find("resume with --from 1") != std::string::npos);
}

TEST_CASE("tenure watch resumes on the next socket by revision, or says the ledger moved on",
          "[e2e][cli]") {
  // Single nodes with the same first events stand for a cluster's, where a watch resumes by
  // revision on any node (§10); b saw more than a. c keeps almost no events.
  Daemon a;
  Daemon b;
  Daemon c({"--events-keep", "1", "--sync", "none"});
  auto on_a = a.connect();
  auto on_b = b.connect();
  auto acquire = [](LineClient& node, const std::string& key) {
    REQUIRE(node.call(acquire_req(key, "alice", "\"ttl_ms\":60000"))["status"] == "acquired");
  };
  for (const char* key : {"w/1", "w/2", "w/3"}) {
    acquire(on_a, key);
    acquire(on_b, key);
  }
  acquire(on_b, "w/4");
  acquire(on_b, "w/5");
  auto on_c = c.connect();
  for (int i = 0; i < 2100; ++i) {  // past one trimming step (4096 events)
    acquire(on_c, "c/k");
    REQUIRE(on_c.call(release_req("c/k", "alice"))["status"] == "released");
  }

  TempDir t;
  const std::string out = t.path() + "/events";
  auto watch = std::async(std::launch::async, [&] {
    return run_process({"/bin/sh", "-c",
                        tenure_cli_path() + " --json --timeout 2s --socket " + a.socket_path() +
                            "," + b.socket_path() + "," + c.socket_path() + " watch --from 1 > " +
                            out});
  });
  auto events = [&] {
    std::vector<Json> found = json_lines(out);
    std::erase_if(found, [](const Json& j) { return !j.has("event"); });
    return found;
  };
  REQUIRE(wait_until([&] { return events().size() == 3; }, 10000ms));
  // a dies: the watch goes on on b from revision 4, replayed, then live.
  a.kill9();
  REQUIRE(wait_until([&] { return events().size() == 5; }, 10000ms));
  acquire(on_b, "w/6");
  REQUIRE(wait_until([&] { return events().size() == 6; }, 10000ms));
  // b stalls: quiet past --timeout, the watch pings, gets no answer and moves on to c, which no
  // longer keeps revision 7.
  ::kill(b.pid(), SIGSTOP);
  ProcessResult r = watch.get();
  ::kill(b.pid(), SIGCONT);
  INFO(r.describe() << read_file(out));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("cannot resume the watch from revision 7") != std::string::npos);
  auto printed = events();
  REQUIRE(printed.size() == 7);
  // --json prints what the server sent verbatim (§9), its `compacted` too.
  CHECK(printed[6]["event"] == "compacted");
  CHECK(printed[6]["oldest_revision"].u64() > 7);
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(printed[i]["revision"] == static_cast<std::int64_t>(i + 1));
    CHECK(printed[i]["key"] == "w/" + std::to_string(i + 1));
  }
}

TEST_CASE("tenure watch starts on the next socket when the first leaves it unanswered",
          "[e2e][cli]") {
  // a is stopped: it accepts the connection and the watch, and answers nothing.
  Daemon a;
  Daemon b;
  auto on_b = b.connect();
  REQUIRE(on_b.call(acquire_req("w/1", "alice", "\"ttl_ms\":60000"))["status"] == "acquired");
  ::kill(a.pid(), SIGSTOP);
  TempDir t;
  const std::string out = t.path() + "/events";
  auto watch = std::async(std::launch::async, [&] {
    return run_process({"/bin/sh", "-c",
                        tenure_cli_path() + " --json --timeout 1s --socket " + a.socket_path() +
                            "," + b.socket_path() + " watch --from 1 > " + out});
  });
  auto printed = [&] { return json_lines(out); };
  bool started = wait_until([&] { return printed().size() == 2; }, 10000ms);
  // b dies: the resume goes to a, still stopped, and gives up after --timeout.
  b.kill9();
  ProcessResult r = watch.get();
  ::kill(a.pid(), SIGCONT);
  INFO(r.describe() << read_file(out));
  REQUIRE(started);
  auto lines = printed();
  CHECK(lines[0]["status"] == "watching");
  CHECK(lines[1]["key"] == "w/1");
  CHECK(lines[1]["revision"] == 1);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("resume with --from 2") != std::string::npos);
}

TEST_CASE("tenure repeats a request a stalled node left unanswered on the next, when safe",
          "[e2e][cli]") {
  // Two single nodes stand for a cluster's; a is stopped: it accepts connections and requests,
  // and answers nothing.
  Daemon a;
  Daemon b;
  auto on_b = b.connect();
  REQUIRE(on_b.call(acquire_req("re/k", "bob", "\"ttl_ms\":60000"))["status"] == "acquired");
  auto tenure = [&](std::vector<std::string> args) {
    args.insert(args.begin(),
                {"--timeout", "1s", "--socket", a.socket_path() + "," + b.socket_path()});
    return cli(a, args);
  };
  ::kill(a.pid(), SIGSTOP);
  // A read, and an acquire (by the same owner, a repeat gets the same tenure: §3).
  ProcessResult get = tenure({"get", "re/k"});
  ProcessResult acquire = tenure({"acquire", "re/mine", "--owner", "alice", "--ttl", "30s"});
  // A revoke is not repeated: had a ended the tenure, it would end the next one.
  ProcessResult revoke = tenure({"revoke", "re/k"});
  ::kill(a.pid(), SIGCONT);
  INFO(get.describe() << acquire.describe() << revoke.describe());
  CHECK(get.exit_code == 0);
  CHECK(get.out.find("bob") != std::string::npos);
  CHECK(acquire.exit_code == 0);
  CHECK(live_lease(on_b, "re/mine")["owner"] == "alice");
  CHECK(revoke.exit_code == 1);
  CHECK(revoke.err.find("no reply from tenured at " + a.socket_path()) != std::string::npos);
  CHECK(revoke.err.find("not repeated on another node") != std::string::npos);
  CHECK(live_lease(on_b, "re/k")["owner"] == "bob");
}

TEST_CASE("tenure asks the next node when one answers unavailable, when safe", "[e2e][cli]") {
  // a's keys are moving to another node (a failover settling); b serves them.
  Daemon b;
  TempDir t;
  UnavailableNode a(t.path() + "/a.sock");
  auto on_b = b.connect();
  REQUIRE(on_b.call(acquire_req("re/k", "bob", "\"ttl_ms\":60000"))["status"] == "acquired");
  auto tenure = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--timeout", "5s", "--socket", a.path() + "," + b.socket_path()});
    return cli(b, args);
  };
  ProcessResult get = tenure({"get", "re/k"});
  ProcessResult acquire = tenure({"acquire", "re/mine", "--owner", "alice", "--ttl", "30s"});
  const int asked = a.requests();
  // A revoke is not repeated: the node's answer is the command's.
  ProcessResult revoke = tenure({"--json", "revoke", "re/k"});
  INFO(get.describe() << acquire.describe() << revoke.describe());
  CHECK(get.exit_code == 0);
  CHECK(get.out.find("bob") != std::string::npos);
  CHECK(acquire.exit_code == 0);
  CHECK(live_lease(on_b, "re/mine")["owner"] == "alice");
  CHECK(asked == 2);
  CHECK(revoke.exit_code == 1);
  CHECK(a.requests() == asked + 1);
  auto reply = Json::parse(revoke.out);
  REQUIRE(reply);
  CHECK((*reply)["error"] == "unavailable");
  CHECK(live_lease(on_b, "re/k")["owner"] == "bob");
}

TEST_CASE("tenure goes around the sockets again while a node answers unavailable", "[e2e][cli]") {
  Daemon b;
  TempDir t;
  UnavailableNode a(t.path() + "/a.sock");
  // b's socket once the failover settled; nothing there before.
  const std::string settled = t.path() + "/settled.sock";
  auto tenure = [&](const std::string& timeout) {
    return cli(b, {"--timeout", timeout, "--socket", a.path() + "," + settled, "get", "re/k"});
  };
  // Not settled within the timeout: the node's answer, after asking it again.
  ProcessResult unsettled = tenure("1s");
  INFO(unsettled.describe());
  CHECK(unsettled.exit_code == 1);
  CHECK(unsettled.err.find("unavailable: the key moved to another node") != std::string::npos);
  CHECK(a.requests() >= 2);

  // Settled while it goes around.
  const int before = a.requests();
  auto get = std::async(std::launch::async, [&] { return tenure("30s"); });
  REQUIRE(wait_until([&] { return a.requests() >= before + 2; }, 10000ms));
  REQUIRE(::symlink(b.socket_path().c_str(), settled.c_str()) == 0);
  ProcessResult r = get.get();
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("re/k") != std::string::npos);
}
