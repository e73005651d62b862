// --checkpoint-every and --checkpoint-ops: when the ledger writes the rows changed since its last
// checkpoint. What a checkpoint did not cover is rebuilt from the event log after a crash, and
// the restart says how many ops that was.
#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "tests/e2e/e2e.hpp"

using namespace e2e;

namespace {

// The ops a start rebuilt from the event log (0 when it rebuilt none).
int rebuilt_ops(const std::string& log) {
  std::smatch m;
  static const std::regex kRebuilt("rebuilt the rows of ([0-9]+) ops");
  return std::regex_search(log, m, kRebuilt) ? std::stoi(m[1]) : 0;
}

}  // namespace

TEST_CASE("a checkpoint comes every --checkpoint-every, also with no write after it",
          "[e2e][crash]") {
  Daemon d({"--checkpoint-every", "100ms"});
  {
    auto c = d.connect();
    REQUIRE(c.call(acquire_req("ck/a", "alice", "\"ttl_ms\":60000"))["status"] == "acquired");
  }
  // Twenty intervals: the checkpoint is due after one, with nothing else to wake the writer.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  d.restart_after_crash();
  CHECK(rebuilt_ops(d.log()) == 0);
  auto c = d.connect();
  Json g = c.call(get_req("ck/a"));
  CHECK(g["lease"]["owner"] == "alice");
  CHECK(g["lease"]["token"] == 1);
}

TEST_CASE("--checkpoint-every and --checkpoint-ops out of range are refused", "[e2e][daemon]") {
  TempDir dir;
  auto refused = [&](const std::string& flag, const std::string& value) {
    ProcessResult r = run_process({tenured_path(), "--data-dir", dir.path() + "/data", flag, value},
                                  ProcessOptions{{}, {}, "", Millis(20000)});
    INFO(r.describe());
    CHECK(r.exited);
    CHECK(r.exit_code == 1);
    CHECK((r.out + r.err).find(flag + " must be") != std::string::npos);
  };
  refused("--checkpoint-every", "0s");
  refused("--checkpoint-every", "25h");
  refused("--checkpoint-ops", "0");
}

TEST_CASE("--checkpoint-ops checkpoints after that many ops", "[e2e][crash]") {
  Daemon d({"--checkpoint-every", "1h", "--checkpoint-ops", "2"});
  constexpr int kOps = 10;
  {
    auto c = d.connect();
    for (int i = 0; i < kOps; ++i) {
      REQUIRE(c.call(acquire_req("ck/" + std::to_string(i), "alice",
                                 "\"ttl_ms\":60000"))["status"] == "acquired");
    }
  }
  d.restart_after_crash();
  // At most the ops since the last checkpoint (three when one began before the second op was
  // durable); without checkpoints, all of them.
  CHECK(rebuilt_ops(d.log()) <= 3);
  auto c = d.connect();
  for (int i = 0; i < kOps; ++i) {
    CHECK(c.call(get_req("ck/" + std::to_string(i)))["lease"]["token"] == 1);
  }
}
