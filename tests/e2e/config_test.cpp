// tenured's configuration file (--config, default /etc/tenure/tenured.conf): the long flags'
// names as settings, the command line over the file, and no silently ignored setting.
#include <algorithm>
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
  // One-shot flags are for the command line only: a file would repeat them at every start.
  refused(write_config(dir, "recover = true\n"), "recover: This option is not allowed");
  refused(write_config(dir, "default-ttl = \"48h\"\n"), "--default-ttl is outside");
  refused(write_config(dir, "revision-floor = 5\n"), "in the config file " + dir.path());
}

TEST_CASE("cluster flags come all together, each well formed", "[e2e][daemon]") {
  TempDir dir;
  auto refused = [&](std::vector<std::string> flags, const std::string& says) {
    std::vector<std::string> argv{tenured_path(), "--data-dir", dir.path() + "/data"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    ProcessResult r = run_process(argv, ProcessOptions{{}, {}, "", Millis(20000)});
    INFO(r.describe());
    CHECK(r.exited);
    CHECK(r.exit_code == 1);
    CHECK((r.out + r.err).find(says) != std::string::npos);
  };
  const std::vector<std::string> good{
      "--cluster", "etcd", "--etcd-endpoints", "http://127.0.0.1:1,http://127.0.0.1:2",
      "--node-id", "n1",   "--peer-listen",    "127.0.0.1:7521"};
  // The good flags with `flag` set to `value` instead, or added.
  auto with = [&](const std::string& flag, const std::string& value) {
    std::vector<std::string> flags = good;
    auto it = std::find(flags.begin(), flags.end(), flag);
    if (it == flags.end()) {
      flags.push_back(flag);
      if (!value.empty()) flags.push_back(value);
    } else {
      *(it + 1) = value;
    }
    return flags;
  };
  refused({"--cluster", "etcd"}, "missing: --etcd-endpoints, --node-id, --peer-listen");
  refused({"--cluster", "etcd", "--node-id", "n1"}, "missing: --etcd-endpoints, --peer-listen");
  refused({"--cluster", "zookeeper"}, "zookeeper");
  refused({"--node-id", "n1"}, "--node-id goes with --cluster etcd");
  refused({"--cluster-lease-ttl", "5s"}, "--cluster-lease-ttl goes with --cluster etcd");
  refused(with("--node-id", "n/1"), "--node-id 'n/1'");
  refused(with("--peer-listen", "0.0.0.0:7521"), "--peer-listen 0.0.0.0:7521");
  refused(with("--peer-listen", "127.0.0.1:0"), "--peer-listen 127.0.0.1:0");
  refused(with("--etcd-endpoints", "127.0.0.1:2379"), "--etcd-endpoints");
  refused(with("--cluster-prefix", "tenure/"), "--cluster-prefix 'tenure/'");
  refused(with("--cluster-lease-ttl", "1500ms"), "--cluster-lease-ttl must be whole seconds");
  refused(with("--recover", ""), "--recover, --restore-from and --revision-floor");
}
