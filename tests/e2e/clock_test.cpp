// The wall clock stepped under tenured (§4): libfaketime moves the daemon's wall clock while its
// monotonic clock runs on, the way an NTP step or an operator's `date -s` would. libfaketime
// recurses into itself when jemalloc initialises under it, so these daemons are the same tenured
// linked with glibc's malloc.
#include <stdlib.h>

#include <fstream>

#include "tests/e2e/e2e.hpp"

using namespace e2e;

namespace {

const char* const kFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

// Daemons started while it lives see a wall clock offset by what `offset_file` says ("+1h",
// "-30m", "+0"), re-read on every call, so a test can step it under a running daemon.
class SteppedWallClock {
 public:
  explicit SteppedWallClock(std::string offset_file) : file_(std::move(offset_file)) {
    REQUIRE(std::ifstream(kFaketime).good());  // scripts/setup.sh --test installs faketime
    step("+0");
    ::setenv("LD_PRELOAD", kFaketime, 1);
    ::setenv("FAKETIME_TIMESTAMP_FILE", file_.c_str(), 1);
    ::setenv("FAKETIME_NO_CACHE", "1", 1);
    ::setenv("DONT_FAKE_MONOTONIC", "1", 1);
    ::setenv("TENURE_E2E_TENURED", TENURED_GLIBC_PATH, 1);
  }
  ~SteppedWallClock() {
    for (const char* name : {"LD_PRELOAD", "FAKETIME_TIMESTAMP_FILE", "FAKETIME_NO_CACHE",
                             "DONT_FAKE_MONOTONIC", "TENURE_E2E_TENURED"}) {
      ::unsetenv(name);
    }
  }
  void step(const std::string& offset) { std::ofstream(file_, std::ios::trunc) << offset << "\n"; }

 private:
  std::string file_;
};

}  // namespace

TEST_CASE("stepping the wall clock while running neither expires nor extends a lease",
          "[e2e][clock]") {
  TempDir tmp;
  SteppedWallClock wall(tmp.path() + "/offset");
  Daemon d;
  auto c = d.connect();
  Json a = c.call(acquire_req("step/k", "o", "\"ttl_ms\":3000"));
  REQUIRE(a["status"] == "acquired");

  wall.step("+1h");  // a step forward must not end the lease early
  std::this_thread::sleep_for(500ms);
  CHECK(c.call(renew_req("step/k", "o", "\"ttl_ms\":3000"))["status"] == "renewed");

  wall.step("-1h");  // nor a step back keep it past its deadline
  REQUIRE(wait_free(c, "step/k", 20000ms));
  auto h = full_history(c, "step/k");
  REQUIRE(h.size() == 1);
  CHECK(h[0]["end"] == "expired");
}

TEST_CASE("a wall clock stepped back across a restart does not stretch persisted leases",
          "[e2e][clock]") {
  TempDir tmp;
  Daemon d({}, false);
  {
    // The ledger is written while the wall clock is an hour ahead of what it will be later.
    SteppedWallClock wall(tmp.path() + "/offset");
    wall.step("+1h");
    d.start();
    auto c = d.connect();
    REQUIRE(c.call(acquire_req("back/k", "o", "\"ttl_ms\":2000"))["status"] == "acquired");
    REQUIRE(d.terminate().exit_code == 0);
  }
  d.start();  // the true wall clock: an hour "earlier" than the ledger's newest event
  auto c = d.connect();
  // Granted for 2 s: it ends about then, not an hour later.
  REQUIRE(wait_free(c, "back/k", 20000ms));
  auto h = full_history(c, "back/k");
  REQUIRE(h.size() == 1);
  CHECK(h[0]["end"] == "expired");
  CHECK(c.call(acquire_req("back/k", "p"))["token"] == 2);
  CHECK(d.log().find("behind the ledger") != std::string::npos);
}
