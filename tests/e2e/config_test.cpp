// tenured's configuration file (--config, default /etc/tenure/tenured.conf): the long flags'
// names as settings, the command line over the file, and no silently ignored setting.
#include <fstream>

#include "tests/e2e/e2e.hpp"

using namespace e2e;

namespace {

std::string write_config(const TempDir& dir, const std::string& text) {
  std::string path = dir.path() + "/tenured.conf";
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("settings come from the config file, and flags override them", "[e2e][daemon]") {
  TempDir dir;
  std::string config = write_config(dir,
                                    "# tenured settings\n"
                                    "default-ttl = \"2s\"\n"
                                    "max-ttl = \"1h\"\n");
  SECTION("from the file") {
    Daemon d({"--config", config});
    auto c = d.connect();
    CHECK(c.call(acquire_req("cfg/a", "o"))["ttl_ms"] == 2000);
    CHECK(c.call(acquire_req("cfg/b", "o", "\"ttl_ms\":86400000"))["ttl_ms"] == 3600000);
  }
  SECTION("a flag wins over the file") {
    Daemon d({"--config", config, "--default-ttl", "3s"});
    auto c = d.connect();
    CHECK(c.call(acquire_req("cfg/a", "o"))["ttl_ms"] == 3000);
    CHECK(c.call(acquire_req("cfg/b", "o", "\"ttl_ms\":86400000"))["ttl_ms"] == 3600000);
  }
}

TEST_CASE("a config file that is missing or names an unknown setting is refused", "[e2e][daemon]") {
  TempDir dir;
  auto refused = [&](const std::string& config, const std::string& says) {
    ProcessResult r =
        run_process({tenured_path(), "--data-dir", dir.path() + "/data", "--config", config},
                    ProcessOptions{{}, {}, "", Millis(20000)});
    INFO(r.describe());
    CHECK(r.exited);
    CHECK(r.exit_code == 1);
    CHECK((r.out + r.err).find(says) != std::string::npos);
  };
  refused(dir.path() + "/none.conf", "none.conf");
  refused(write_config(dir, "default-tll = \"2s\"\n"), "default-tll");
  refused(write_config(dir, "default-ttl = \"soon\"\n"), "soon");
}
