// tenured under systemd, without systemd as PID 1 (packaging/systemd): the notices it sends to
// $NOTIFY_SOCKET and socket activation by systemd-socket-activate.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "tests/e2e/e2e.hpp"
#include "tests/e2e/ws_client.hpp"
#include "tests/support/free_port.hpp"

extern char** environ;

namespace e2e {
namespace {

// A datagram socket standing in for systemd's notification socket.
class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path_.copy(address.sun_path, sizeof address.sun_path - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  }
  ~NotifySocket() { ::close(fd_); }
  const std::string& path() const { return path_; }

  // The next notice, or empty if none arrives within timeout.
  std::string next(Millis timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return "";
    char buffer[4096];
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  }
  // Waits for a notice that contains `state`, skipping others.
  bool wait_for(const std::string& state, Millis timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (next(50ms).find(state) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// Sets environment variables for the daemons this test starts, and unsets them after.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> vars) : vars_(vars) {
    for (const auto& [name, value] : vars_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : vars_) ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

}  // namespace

TEST_CASE("tenured says READY only once its ledger is open, pings the watchdog, says STOPPING",
          "[e2e][systemd]") {
  Daemon d({}, false);
  NotifySocket notify(d.root() + "/notify");
  {
    ScopedEnv env({{"NOTIFY_SOCKET", notify.path()}, {"WATCHDOG_USEC", "200000"}});
    d.start();
  }
  REQUIRE(notify.wait_for("READY=1", 10000ms));
  CHECK(d.connect().call(acquire_req("a", "o", "\"ttl_ms\":5000"))["status"] == "acquired");
  CHECK(notify.wait_for("WATCHDOG=1", 5000ms));

  // A daemon that cannot open its ledger (the first one holds it) never says READY.
  TempDir other;
  ProcessOptions options;
  options.set_env = {"NOTIFY_SOCKET=" + notify.path()};
  ProcessResult second = run_process({tenured_path(), "--data-dir", d.data_dir(), "--socket",
                                      other.path() + "/s.sock", "--ws-listen", "off"},
                                     options);
  INFO(second.describe());
  CHECK(second.exit_code != 0);
  CHECK_FALSE(notify.wait_for("READY=1", 1000ms));  // the first one's pings go on meanwhile

  d.terminate();
  CHECK(notify.wait_for("STOPPING=1", 5000ms));
}

TEST_CASE("systemd-socket-activate starts tenured on the first connection to its sockets",
          "[e2e][systemd]") {
  const std::string activate = "/usr/bin/systemd-socket-activate";
  if (::access(activate.c_str(), X_OK) != 0) {
    WARN("systemd-socket-activate is not installed (Debian package systemd); skipped");
    return;
  }
  TempDir dir;
  std::string socket = dir.path() + "/tenured.sock";
  std::string data = dir.path() + "/data";
  std::string log = dir.path() + "/log";
  tenure::test::ReservedPort web_port;
  unsigned short port = web_port.port();
  // --ws-listen off: the web listener is the one passed in, whatever the flag says.
  std::vector<std::string> args{
      activate,       "-l",         socket, "-l",          "127.0.0.1:" + std::to_string(port),
      tenured_path(), "--data-dir", data,   "--ws-listen", "off"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  REQUIRE(posix_spawn(&pid, activate.c_str(), &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  struct Reap {
    pid_t pid;
    ~Reap() {
      if (pid <= 0) return;  // reaped already
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{pid};

  REQUIRE(wait_until([&] { return std::filesystem::exists(socket); }, 10000ms));
  CHECK_FALSE(std::filesystem::exists(data));  // no tenured yet: it starts on the first connection
  // The file appears at bind, a moment before the socket listens.
  std::optional<LineClient> first;
  REQUIRE(
      wait_until([&] { return (first = LineClient::try_connect(socket)).has_value(); }, 10000ms));
  LineClient& c = *first;
  Json r = c.call(acquire_req("job/a", "o", "\"ttl_ms\":5000"), 30000ms);
  INFO(read_file(log));
  CHECK(r["status"] == "acquired");
  CHECK(read_file(log).find("from the service manager") != std::string::npos);
  CHECK(http_get(port, "/healthz").status == 200);
  c.close();

  // It stops like any tenured, and leaves the socket file to the service manager.
  REQUIRE(::kill(pid, SIGTERM) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  reap.pid = -1;
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(std::filesystem::exists(socket));
}

}  // namespace e2e
