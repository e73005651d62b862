// Faults of the disk under a real tenured (§6): a damaged ledger refuses to start until
// --recover, and a full disk makes writes `unavailable` until space returns, without a restart.
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "tests/e2e/e2e.hpp"
#include "tests/e2e/ws_client.hpp"

using namespace e2e;
namespace fs = std::filesystem;

namespace {

std::string newest_wal(const std::string& ledger) {
  std::string found;
  for (const auto& entry : fs::directory_iterator(ledger)) {
    if (entry.path().extension() == ".log" && entry.path().string() > found) {
      found = entry.path().string();
    }
  }
  return found;
}

// The largest file in `dir` whose extension is one of `extensions`; empty if none.
std::string largest_file(const std::string& dir, std::initializer_list<std::string> extensions) {
  std::string largest;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string extension = entry.path().extension().string();
    if (std::find(extensions.begin(), extensions.end(), extension) != extensions.end() &&
        (largest.empty() || entry.file_size() > fs::file_size(largest))) {
      largest = entry.path().string();
    }
  }
  return largest;
}

// Changes bytes in the middle of `file`, in place.
void damage_middle(const std::string& file) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  io.seekp(static_cast<std::streamoff>(fs::file_size(file) / 2));
  io.write("\xff\x00\xff\x00\xff\x00\xff\x00", 8);
}

// A small tmpfs mounted on `dir` for the test's length; empty if this machine does not allow it.
class SmallDisk {
 public:
  explicit SmallDisk(const std::string& dir, const std::string& size = "8m") : dir_(dir) {
    fs::create_directories(dir);
    std::string options = "size=" + size + ",mode=0700";
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  // Writes zeros until the disk is full, then gives `leave` bytes back.
  void fill(std::uintmax_t leave = 0) {
    {
      std::ofstream out(dir_ + "/fill", std::ios::binary | std::ios::app);
      std::string chunk(64 * 1024, '\0');
      while (out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()))) out.flush();
    }
    if (leave > 0) fs::resize_file(dir_ + "/fill", fs::file_size(dir_ + "/fill") - leave);
  }
  void free_space() { fs::remove(dir_ + "/fill"); }

 private:
  std::string dir_;
  bool mounted_ = false;
};

}  // namespace

TEST_CASE("a damaged WAL stops tenured at start-up; --recover starts above every token",
          "[e2e][faults]") {
  Daemon d;
  std::uint64_t revision = 0;
  {
    auto c = d.connect();
    for (int i = 0; i < 2; ++i) {
      REQUIRE(c.call(acquire_req("rec/0", "a"))["status"] == "acquired");
      REQUIRE(c.call(release_req("rec/0", "a"))["status"] == "released");
    }
    for (int i = 0; i < 300; ++i) {
      Json r = c.call(acquire_req("rec/" + std::to_string(i), "a"));
      REQUIRE(r["status"] == "acquired");
      revision = r["revision"].u64();
    }
  }
  REQUIRE(d.terminate().exit_code == 0);
  std::string wal = newest_wal(d.data_dir() + "/ledger");
  REQUIRE_FALSE(wal.empty());
  fs::resize_file(wal, fs::file_size(wal) / 2);

  ProcessResult refused = run_process(d.argv(), ProcessOptions{{}, {}, {}, 30000ms});
  CHECK(refused.exited);
  CHECK(refused.exit_code == 1);
  std::string said = refused.out + refused.err;
  CHECK_THAT(said, Catch::Contains("damaged"));
  CHECK_THAT(said, Catch::Contains(fs::path(wal).filename().string()));
  CHECK_THAT(said, Catch::Contains("--recover"));

  d.extra_args().push_back("--recover");
  d.start();
  // Half the WAL went: the log says which acknowledged revisions were lost.
  CHECK_THAT(d.log(), Catch::Contains(std::to_string(revision) + ", acknowledged, were lost"));
  auto c = d.connect();
  Json r = c.call(acquire_req("rec/0", "b"));
  if (r["status"] == "held") {
    REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"rec/0\"")["status"] == "revoked");
    r = c.call(acquire_req("rec/0", "b"));
  }
  REQUIRE(r["status"] == "acquired");
  CHECK(r["token"].u64() > revision);
  CHECK(r["revision"].u64() > revision);
  Json fresh = c.call(acquire_req("rec/299", "b"));
  if (fresh["status"] == "acquired") CHECK(fresh["token"].u64() > revision);
}

TEST_CASE("a ledger that lost its MANIFEST after kill -9 keeps every lease through --recover",
          "[e2e][faults]") {
  Daemon d;
  Json held;
  {
    auto c = d.connect();
    for (int i = 0; i < 300; ++i) {
      REQUIRE(c.call(acquire_req("rec/" + std::to_string(i), "a", "\"ttl_ms\":600000"))["status"] ==
              "acquired");
    }
    held = live_lease(c, "rec/7");
  }
  d.kill9();
  // The acquires are only in the WAL; the repair rebuilds the MANIFEST from table files.
  for (const auto& entry : fs::directory_iterator(d.data_dir() + "/ledger")) {
    std::string name = entry.path().filename().string();
    if (name == "CURRENT" || name.rfind("MANIFEST-", 0) == 0) fs::remove(entry.path());
  }
  ProcessResult refused = run_process(d.argv(), ProcessOptions{{}, {}, {}, 30000ms});
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.out + refused.err, Catch::Contains("its CURRENT file is missing"));

  d.extra_args().push_back("--recover");
  d.start();
  auto c = d.connect();
  Json kept = live_lease(c, "rec/7");
  REQUIRE(kept.is_object());
  CHECK(kept["token"].u64() == held["token"].u64());
  CHECK(kept["owner"] == "a");
  CHECK(c.call(acquire_req("rec/299", "b"))["status"] == "held");
  CHECK(c.call(acquire_req("fresh", "b"))["token"].u64() > 300);
}

TEST_CASE("a full disk answers unavailable and 503, and tenured resumes when space returns",
          "[e2e][faults]") {
  auto sync = GENERATE(std::string("always"), std::string("none"));
  Daemon d(web_args({"--sync", sync}), false);
  SmallDisk disk(d.data_dir());
  if (!disk.mounted()) {
    WARN("skipped: cannot mount a tmpfs here (needs root)");
    return;
  }
  d.start();
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("before", "a"))["status"] == "acquired");

  disk.fill();
  bool refused = false;
  for (int i = 0; i < 200 && !refused; ++i) {
    Json r = c.call(acquire_req("full/" + std::to_string(i), "a"));
    if (r["status"] == "error") {
      check_error(r, "unavailable");
      refused = true;
    }
  }
  CHECK(refused);
  CHECK(http_get(d.web_port(), "/healthz").status == 503);
  CHECK(c.call(get_req("before"))["lease"]["owner"] == "a");  // reads go on

  disk.free_space();
  CHECK(wait_until([&] { return c.call(acquire_req("after", "a"))["status"] == "acquired"; },
                   10000ms));
  CHECK(http_get(d.web_port(), "/healthz").status == 200);
  CHECK(d.running());

  // A restart on a disk that is still full starts or refuses clearly; it never aborts.
  disk.fill();
  ProcessResult stopped = d.terminate();
  CHECK(stopped.exited);
  ProcessResult again = run_process(d.argv(), ProcessOptions{{}, {}, {}, 5000ms});
  CHECK(again.signal != SIGABRT);
  CHECK((again.timed_out || again.exit_code == 1));
  disk.free_space();
}

// Found by a black-box audit: with the WAL's preallocated room used up, a WAL append that fails
// for want of space left RocksDB unable to write until a restart (facebook/rocksdb#11643).
TEST_CASE("a disk that fills under big records still resumes when space returns", "[e2e][faults]") {
  Daemon d(web_args(), false);
  SmallDisk disk(d.data_dir(), "64m");
  if (!disk.mounted()) {
    WARN("skipped: cannot mount a tmpfs here (needs root)");
    return;
  }
  d.start();
  auto c = d.connect();
  disk.fill(128 * 1024);
  std::string pad(400, 'x');
  std::string owner(100, 'o');
  bool refused = false;
  for (int i = 0; i < 20000 && !refused; ++i) {
    std::string key = pad + "/" + std::to_string(i % 2000);
    Json r = c.call(acquire_req(key, owner, "\"ttl_ms\":3600000"));
    if (r["status"] == "error") {
      check_error(r, "unavailable");
      refused = true;
      break;
    }
    REQUIRE(r["status"] == "acquired");
    r = c.call(release_req(key, owner));
    if (r["status"] == "error") {
      check_error(r, "unavailable");
      refused = true;
    }
  }
  REQUIRE(refused);
  disk.free_space();
  CHECK(wait_until([&] { return c.call(acquire_req("after", "a"))["status"] == "acquired"; },
                   10000ms));
  CHECK(http_get(d.web_port(), "/healthz").status == 200);
}

TEST_CASE("a backup restored goes on above every token issued after it", "[e2e][faults]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("b/kept", "a"))["status"] == "acquired");
  std::string backup = d.root() + "/backup";
  ProcessResult made =
      run_process({tenure_cli_path(), "--socket", d.socket_path(), "admin", "backup", backup});
  REQUIRE(made.exit_code == 0);
  CHECK_THAT(made.out, Catch::Contains("--restore-from"));
  // Taken after the backup: the restored ledger does not know these tokens.
  std::uint64_t issued = 0;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(c.call(release_req("b/kept", "a"))["status"] == "released");
    Json r = c.call(acquire_req("b/kept", "a"));
    REQUIRE(r["status"] == "acquired");
    issued = std::max(issued, r["revision"].u64());
  }
  REQUIRE(c.call(acquire_req("b/later", "a"))["status"] == "acquired");
  check_error(c.call("\"op\":\"backup\",\"dir\":\"relative\""), "bad_request", "dir");
  check_error(c.call("\"op\":\"backup\",\"dir\":" + quote(backup)), "bad_request", "exists");
  c.close();
  REQUIRE(d.terminate().exit_code == 0);

  d.extra_args() = {"--restore-from", backup};
  d.start();
  auto restored = d.connect();
  Json kept = restored.call(get_req("b/kept"));
  CHECK(kept["lease"]["token"] == 1);  // as in the backup
  CHECK(restored.call(get_req("b/later"))["lease"].is_null());
  REQUIRE(restored.call("\"op\":\"revoke\",\"key\":\"b/kept\"")["status"] == "revoked");
  Json again = restored.call(acquire_req("b/kept", "b"));
  REQUIRE(again["status"] == "acquired");
  CHECK(again["token"].u64() > 4);
  CHECK(again["token"].u64() > issued);
  CHECK(again["revision"].u64() > issued);
  Json later = restored.call(acquire_req("b/later", "b"));
  CHECK(later["token"].u64() > issued);
}

TEST_CASE("a damaged backup is refused before it replaces anything", "[e2e][faults]") {
  Daemon d;
  auto c = d.connect();
  for (int i = 0; i < 200; ++i) {
    REQUIRE(c.call(acquire_req("b/" + std::to_string(i), "a"))["status"] == "acquired");
  }
  std::string backup = d.root() + "/backup";
  REQUIRE(run_process({tenure_cli_path(), "--socket", d.socket_path(), "admin", "backup", backup})
              .exit_code == 0);
  c.close();
  REQUIRE(d.terminate().exit_code == 0);
  // Bytes changed in the middle of the backup's largest file, a table file or its WAL.
  std::string largest = largest_file(backup, {".sst", ".log"});
  REQUIRE_FALSE(largest.empty());
  // A backup's table files are hard links to the ledger's: the damage goes to a copy of its own.
  fs::copy_file(largest, largest + ".own");
  fs::rename(largest + ".own", largest);
  damage_middle(largest);
  std::vector<std::string> argv = d.argv();
  argv.push_back("--restore-from");
  argv.push_back(backup);
  ProcessResult refused = run_process(argv, ProcessOptions{{}, {}, {}, 30000ms});
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.out + refused.err, Catch::Contains("the backup in " + backup + " is damaged"));
  // Nothing moved: the ledger starts as it was, without a restore to finish.
  d.start();
  CHECK(d.connect().call(get_req("b/7"))["lease"]["owner"] == "a");
}

TEST_CASE("a backup is read through when taken: a damaged table file fails it, and it is removed",
          "[e2e][faults]") {
  Daemon d;
  auto c = d.connect();
  for (int i = 0; i < 200; ++i) {
    REQUIRE(c.call(acquire_req("t/" + std::to_string(i), "a"))["status"] == "acquired");
  }
  c.close();
  REQUIRE(d.terminate().exit_code == 0);  // its stop flushes the rows into table files
  d.start();                              // whose start-up check reads them whole
  std::string largest = largest_file(d.data_dir() + "/ledger", {".sst"});
  REQUIRE_FALSE(largest.empty());
  // Damaged under the running daemon, which has read it already: only a backup reads it again.
  damage_middle(largest);
  std::string backup = d.root() + "/backup";
  ProcessResult made =
      run_process({tenure_cli_path(), "--socket", d.socket_path(), "admin", "backup", backup});
  CHECK(made.exit_code == 1);
  CHECK_THAT(made.out + made.err,
             Catch::Contains("the backup just taken in " + backup + " is damaged"));
  CHECK_FALSE(fs::exists(backup));
  d.kill9();  // its ledger is damaged: how it stops is not this test's
}

TEST_CASE("a WAL cut off inside its last record after kill -9 is refused, not taken for a crash's",
          "[e2e][faults]") {
  Daemon d;
  std::uint64_t revision = 0;
  {
    auto c = d.connect();
    for (int i = 0; i < 50; ++i) {
      Json r = c.call(acquire_req("cut/" + std::to_string(i), "a"));
      REQUIRE(r["status"] == "acquired");
      revision = r["revision"].u64();
    }
  }
  d.kill9();  // at once: the marks file's durable revision may be a second behind
  std::string wal = newest_wal(d.data_dir() + "/ledger");
  REQUIRE_FALSE(wal.empty());
  std::string bytes = read_file(wal);
  std::uintmax_t written = bytes.find_last_not_of('\0') + 1;
  std::uintmax_t end = written - 37;  // inside the last record, which acknowledged cut/49
  if (end % 4096 == 0) --end;
  fs::resize_file(wal, end);

  ProcessResult refused = run_process(d.argv(), ProcessOptions{{}, {}, {}, 30000ms});
  CHECK(refused.exit_code == 1);
  std::string said = refused.out + refused.err;
  CHECK_THAT(said, Catch::Contains(fs::path(wal).filename().string() +
                                   " ends in a record cut off by the end of the file"));
  CHECK_THAT(said, Catch::Contains("--recover"));
  d.extra_args().push_back("--recover");
  d.start();
  auto c = d.connect();
  Json again = c.call(acquire_req("cut/49", "b"));
  if (again["status"] == "held") {  // the cut took a checkpoint written after it, not its acquire
    REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"cut/49\"")["status"] == "revoked");
    again = c.call(acquire_req("cut/49", "b"));
  }
  REQUIRE(again["status"] == "acquired");
  CHECK(again["token"].u64() > revision);
  CHECK(again["revision"].u64() > revision);
}
