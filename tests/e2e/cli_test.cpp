// The `tenure` command line against a real tenured (§9): exit codes, --json, `tenure run`.
#include <sys/stat.h>

#include "tests/e2e/e2e.hpp"

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
  // An error reply (an owner longer than 128 bytes) is exit 1.
  expect({"acquire", "cli/x", "--owner", std::string(200, 'o')}, 1);
  CHECK(c.call(get_req("cli/x"))["last_token"] == 0);
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
  std::string owner = trim(text.substr(nl2 + 1));
  CHECK_FALSE(owner.empty());

  Json g = c.call(get_req("cli/run"));
  CHECK(g["lease"] == nullptr);
  CHECK(g["last_token"] == 1);
  auto h = full_history(c, "cli/run");
  REQUIRE(h.size() == 1);
  CHECK(h[0]["owner"] == owner);
  CHECK(h[0]["end"] == "released");

  // The next run gets the next token, and the given owner.
  r = cli(d, {"run", "cli/run", "--owner", "runner", "--ttl", "30s", "--", "sh", "-c", script});
  REQUIRE(r.exit_code == 0);
  text = read_file(file);
  CHECK(text == "2\ncli/run\nrunner\n");
  CHECK(live_lease(c, "cli/run") == nullptr);
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

TEST_CASE("tenure run exits 4 without running the command when the key is held", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("cli/busy", "someone", "\"ttl_ms\":60000"))["status"] == "acquired");
  TempDir t;
  std::string file = t.path() + "/ran";
  ProcessResult r = cli(d, {"run", "cli/busy", "--ttl", "30s", "--", "sh", "-c", "touch " + file});
  INFO(r.describe());
  CHECK(r.exited);
  CHECK(r.exit_code == 4);
  struct stat st {};
  CHECK(::stat(file.c_str(), &st) != 0);
  CHECK(live_lease(c, "cli/busy")["owner"] == "someone");
}

TEST_CASE("tenure run keeps renewing a short lease while the command runs", "[e2e][cli]") {
  Daemon d;
  auto c = d.connect();
  TempDir t;
  std::string file = t.path() + "/out";
  ProcessResult r = cli(d, {"run", "cli/long", "--ttl", "900ms", "--", "sh", "-c",
                            "sleep 2.5; echo $TENURE_TOKEN > " + file});
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(read_file(file) == "1\n");
  auto h = full_history(c, "cli/long");
  REQUIRE(h.size() == 1);
  CHECK(h[0]["end"] == "released");
}
