// A socket shared with a group (§7): --socket-mode, --socket-group and --admin-group with real
// groups and a real second user (nobody). Principals stay per uid; admins are root, the server's
// own uid and members of the admin group. Needs root (to add groups and switch users).
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/as_user.hpp"
#include "tests/e2e/e2e.hpp"

using namespace e2e;

namespace {

// A system group for the test, removed (with its memberships) when the test ends.
class TestGroup {
 public:
  explicit TestGroup(const std::string& tag)
      : name_("tnt" + tag + std::to_string(::getpid() % 100000)) {
    run_or_throw({"/usr/sbin/groupadd", name_});
    group* g = ::getgrnam(name_.c_str());
    if (!g) throw std::runtime_error("groupadd made no group " + name_);
    gid_ = g->gr_gid;
  }
  ~TestGroup() { run_process({"/usr/sbin/groupdel", name_}); }
  TestGroup(const TestGroup&) = delete;
  TestGroup& operator=(const TestGroup&) = delete;

  const std::string& name() const { return name_; }
  gid_t gid() const { return gid_; }
  void add_member(const std::string& user) {
    run_or_throw({"/usr/bin/gpasswd", "-a", user, name_});
  }

 private:
  static void run_or_throw(const std::vector<std::string>& argv) {
    ProcessResult r = run_process(argv);
    if (!r.exited || r.exit_code != 0) throw std::runtime_error(argv[0] + ": " + r.describe());
  }

  std::string name_;
  gid_t gid_ = 0;
};

struct stat stat_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st;
}

const std::string kRevoke = "\"op\":\"revoke\",\"key\":\"team/k\",\"reason\":\"by a member\"";

}  // namespace

TEST_CASE("a socket shared with a group: its mode and group, per-uid principals, admin group",
          "[e2e][daemon]") {
  if (!running_as_root()) {
    WARN("SKIPPED: this test needs root to add groups and run clients as user nobody");
    return;
  }
  TestGroup users("u");
  TestGroup admins("a");
  TempDir run_dir;
  // The socket's own directory is tenured's to open to the group; the ones above are ours.
  REQUIRE(::chmod(run_dir.path().c_str(), 0711) == 0);
  std::string socket = run_dir.path() + "/run/tenured.sock";
  Daemon d({"--socket", socket, "--socket-mode", "0660", "--socket-group", users.name(),
            "--admin-group", admins.name()});

  struct stat sock = stat_of(socket);
  CHECK(S_ISSOCK(sock.st_mode));
  CHECK((sock.st_mode & 0777) == 0660);
  CHECK(sock.st_gid == users.gid());
  struct stat dir = stat_of(run_dir.path() + "/run");
  CHECK((dir.st_mode & 0777) == 0710);
  CHECK(dir.st_gid == users.gid());
  CHECK((stat_of(d.data_dir()).st_mode & 0777) == 0700);  // the ledger stays private

  auto root_client = d.connect();
  REQUIRE(root_client.call(acquire_req("team/k", "root-owner", "\"ttl_ms\":600000"))["status"] ==
          "acquired");

  SECTION("a user outside the group cannot connect") {
    AsUserResult r = call_as(Identity{}, socket, {"\"op\":\"ping\""});
    INFO(r.text);
    CHECK(r.replies.empty());
    CHECK(r.text.find("ERROR") != std::string::npos);
  }
  SECTION("a member of the socket group is its own principal and no admin") {
    AsUserResult r = call_as(Identity{65534, 65534, {users.gid()}}, socket,
                             {acquire_req("nobody/k", "nb", "\"ttl_ms\":600000"),
                              release_req("team/k", "root-owner"), kRevoke});
    INFO(r.text);
    REQUIRE(r.replies.size() == 3);
    CHECK(r.replies[0]["status"] == "acquired");
    check_error(r.replies[1], "forbidden");
    check_error(r.replies[2], "forbidden");
    CHECK(live_lease(root_client, "team/k")["owner"] == "root-owner");
  }
  SECTION("a member of the admin group may revoke") {
    admins.add_member("nobody");  // listed in the group database: found by getgrouplist
    AsUserResult r = call_as(Identity{65534, 65534, {users.gid()}}, socket, {kRevoke});
    INFO(r.text);
    REQUIRE(r.replies.size() == 1);
    CHECK(r.replies[0]["status"] == "revoked");
    auto h = full_history(root_client, "team/k");
    REQUIRE(h.size() == 1);
    CHECK(h[0]["revoked_by"] == "uid:65534");
    CHECK(h[0]["reason"] == "by a member");
  }
  SECTION("a process running with the admin group as its group may revoke") {
    AsUserResult r = call_as(Identity{65534, admins.gid(), {users.gid()}}, socket, {kRevoke});
    INFO(r.text);
    REQUIRE(r.replies.size() == 1);
    CHECK(r.replies[0]["status"] == "revoked");
  }
}

TEST_CASE("tenured refuses socket modes and groups that would expose it", "[e2e][daemon]") {
  TempDir dir;
  auto refused = [&](std::vector<std::string> args, const std::string& says) {
    std::vector<std::string> argv{tenured_path(), "--data-dir", dir.path() + "/data", "--ws-listen",
                                  "off"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = run_process(argv, ProcessOptions{{}, {}, "", Millis(20000)});
    INFO(r.describe());
    CHECK(r.exited);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(says) != std::string::npos);
  };
  std::string outside = dir.path() + "/run/tenured.sock";
  refused({"--socket", outside, "--socket-mode", "0666"}, "every user");
  refused({"--socket", outside, "--socket-mode", "0662"}, "every user");
  refused({"--socket", outside, "--socket-mode", "rw"}, "not an octal file mode");
  refused({"--socket", outside, "--socket-mode", "0400"}, "owner read and write");
  refused({"--socket-mode", "0660"}, "outside the data dir");
  refused({"--socket", outside, "--socket-group", "root"}, "--socket-mode");
  refused({"--socket", outside, "--socket-mode", "0660", "--socket-group", "no-such-group-xyz"},
          "no such group");
  refused({"--admin-group", "no-such-group-xyz"}, "no such group");
}
