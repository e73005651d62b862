// The example programs (examples/, shown in docs/clients.md) run against a real tenured.
#include "tests/client/client_common.hpp"

namespace {

const char* const kExpected =
    "token 1 writes \"first draft\": accepted\n"
    "token 2 writes \"final\": accepted\n"
    "token 1 writes late: rejected\n"
    "event acquired example/report token 1\n"
    "event released example/report token 1\n"
    "event acquired example/report token 2\n"
    "event released example/report token 2\n";

}  // namespace

TEST_CASE("the fenced write example rejects the stale token", "[client][examples]") {
  e2e::Daemon d;
  e2e::ProcessOptions options;
  options.set_env = {"TENURE_SOCKET=" + d.socket_path()};
  auto result = e2e::run_process({FENCED_WRITE_PATH, d.root() + "/report.txt"}, options);
  INFO(result.describe());
  CHECK(result.exited);
  CHECK(result.exit_code == 0);
  CHECK(result.out == kExpected);
  CHECK(e2e::read_file(d.root() + "/report.txt") == "final");
}
