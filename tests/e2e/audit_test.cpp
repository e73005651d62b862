// The operations log (--audit-log): a JSON line per mutation with who asked and what came of it,
// off by default, reopened on SIGHUP for log rotation.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "tests/e2e/e2e.hpp"

using namespace e2e;

namespace {

std::vector<Json> lines_of(const std::string& path) {
  std::vector<Json> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) {
    auto j = Json::parse(line);
    if (!j) FAIL("not JSON: " << line);
    out.push_back(*j);
  }
  return out;
}

}  // namespace

TEST_CASE("the audit log records each mutation, who asked and what came of it", "[e2e][daemon]") {
  TempDir logs;
  std::string path = logs.path() + "/audit.log";
  Daemon d({"--audit-log", path});
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("au/k", "o", "\"ttl_ms\":600000"))["status"] == "acquired");
  REQUIRE(c.call(acquire_req("au/k", "p"))["status"] == "held");
  REQUIRE(c.call(get_req("au/k"))["status"] == "ok");  // reads are not audited
  REQUIRE(c.call("\"op\":\"keepalive\",\"owner\":\"o\"")["status"] == "renewed");
  REQUIRE(c.call(release_req("au/k", "o"))["status"] == "released");
  REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"au/k\"")["status"] == "not_holder");
  REQUIRE(c.call(acquire_req("au/v", "v"))["status"] == "acquired");
  REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"au/v\"")["status"] == "revoked");
  REQUIRE(c.call("\"op\":\"backup\",\"dir\":" + quote(logs.path() + "/backup"))["status"] == "ok");

  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto lines = lines_of(path);
  REQUIRE(lines.size() == 8);
  const Json& first = lines[0];
  INFO(first.source());
  CHECK(time_ms(first["time"]).has_value());
  CHECK(first["principal"] == "uid:" + std::to_string(::geteuid()));
  CHECK(first["uid"] == static_cast<std::uint64_t>(::geteuid()));
  CHECK(first["pid"] == static_cast<std::int64_t>(::getpid()));
  CHECK(first["op"] == "acquire");
  CHECK(first["key"] == "au/k");
  CHECK(first["owner"] == "o");
  CHECK(first["token"] == 1);
  CHECK(first["outcome"] == "acquired");
  CHECK(lines[1]["owner"] == "p");
  CHECK(lines[1]["outcome"] == "held");
  CHECK(lines[1]["token"] == nullptr);
  CHECK(lines[2]["op"] == "keepalive");
  CHECK(lines[2]["key"] == nullptr);
  CHECK(lines[2]["outcome"] == "renewed");
  CHECK(lines[3]["op"] == "release");
  CHECK(lines[3]["token"] == 1);
  CHECK(lines[3]["outcome"] == "released");
  CHECK(lines[4]["op"] == "revoke");
  CHECK(lines[4]["outcome"] == "not_holder");
  CHECK(lines[4]["owner"] == nullptr);
  // A revoke names the owner whose lease it ended.
  CHECK(lines[6]["op"] == "revoke");
  CHECK(lines[6]["key"] == "au/v");
  CHECK(lines[6]["owner"] == "v");
  CHECK(lines[6]["token"] == 1);
  CHECK(lines[6]["outcome"] == "revoked");
  CHECK(lines[7]["op"] == "backup");
  CHECK(lines[7]["key"] == nullptr);
  CHECK(lines[7]["owner"] == nullptr);
  CHECK(lines[7]["outcome"] == "ok");

  // Rotation: move the file away, SIGHUP, and the next line goes to a new file.
  REQUIRE(std::rename(path.c_str(), (path + ".1").c_str()) == 0);
  REQUIRE(::kill(d.pid(), SIGHUP) == 0);
  CHECK(wait_until(
      [&] {
        c.call(acquire_req("au/r", "o"));
        return !lines_of(path).empty();
      },
      5000ms));
  CHECK(lines_of(path + ".1").size() >= 5);
  CHECK(lines_of(path)[0]["key"] == "au/r");
}
