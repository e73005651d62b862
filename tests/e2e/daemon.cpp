// The listener below needs Catch2's reporter interfaces.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "tests/e2e/daemon.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace e2e {

#ifndef TENURED_PATH
#error "TENURED_PATH must be defined by the build"
#endif
#ifndef TENURE_CLI_PATH
#error "TENURE_CLI_PATH must be defined by the build"
#endif

// TENURE_E2E_TENURED runs the tests against another build of tenured (an installed one, or the
// glibc-malloc build the wall-clock tests need).
std::string tenured_path() {
  const char* other = std::getenv("TENURE_E2E_TENURED");
  return other && *other ? other : TENURED_PATH;
}
std::string tenure_cli_path() { return TENURE_CLI_PATH; }

bool running_as_root() { return ::geteuid() == 0; }

namespace {

using Clock = std::chrono::steady_clock;

// Logs of the daemons that ended during the current test case, printed if it fails.
std::vector<std::string>& pending_logs() {
  static std::vector<std::string> logs;
  return logs;
}

class PrintDaemonLogsOnFailure : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(Catch::TestCaseStats const& stats) override {
    if (stats.totals.assertions.failed > 0 && !pending_logs().empty()) {
      std::cerr << "\n===== tenured logs for failed test case \"" << stats.testInfo.name
                << "\" =====\n";
      for (const auto& log : pending_logs()) std::cerr << log << "\n";
      std::cerr << "===== end of tenured logs =====\n";
    }
    pending_logs().clear();
  }
};

std::vector<std::string> build_env(const ProcessOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool drop = false;
    for (const auto& u : options.unset_env) drop = drop || u == name;
    for (const auto& s : options.set_env) drop = drop || s.substr(0, s.find('=')) == name;
    if (!drop) env.push_back(entry);
  }
  for (const auto& s : options.set_env) env.push_back(s);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In a forked child: die with the parent, redirect output, exec. Never returns.
[[noreturn]] void exec_child(std::vector<std::string> argv, std::vector<std::string> env,
                             const std::string& out_path, const std::string& err_path,
                             const std::string& workdir, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  int err =
      err_path == out_path ? out : ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (out >= 0) ::dup2(out, 1);
  if (err >= 0) ::dup2(err, 2);
  if (!workdir.empty() && ::chdir(workdir.c_str()) != 0) ::_exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  auto cargv = c_strings(argv);
  auto cenv = c_strings(env);
  ::execve(cargv[0], cargv.data(), cenv.data());
  std::string msg = "exec " + argv[0] + ": " + std::strerror(errno) + "\n";
  (void)!::write(2, msg.data(), msg.size());
  ::_exit(127);
}

void fill_status(ProcessResult& r, int status) {
  if (WIFEXITED(status)) {
    r.exited = true;
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
}

// Waits for pid up to timeout; returns true and fills r if it ended.
bool wait_for(pid_t pid, std::chrono::milliseconds timeout, ProcessResult& r) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      fill_status(r, status);
      return true;
    }
    if (w < 0 && errno != EINTR) return true;  // not our child any more
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

CATCH_REGISTER_LISTENER(PrintDaemonLogsOnFailure)

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tail(const std::string& text, std::size_t max) {
  if (text.size() <= max) return text;
  return "..." + text.substr(text.size() - max);
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tenure-e2e-XXXXXX";
  if (!::mkdtemp(tmpl.data())) {
    throw std::runtime_error("mkdtemp(" + tmpl + "): " + std::strerror(errno));
  }
  ::chmod(tmpl.c_str(), 0700);
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (std::getenv("TENURE_E2E_KEEP")) {
    std::cerr << "keeping " << path_ << "\n";
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ProcessResult::describe() const {
  std::string d;
  if (exited) {
    d = "exit " + std::to_string(exit_code);
  } else if (signal) {
    d = "killed by signal " + std::to_string(signal);
  } else {
    d = "did not end";
  }
  if (timed_out) d += " (timed out)";
  d += "\n--- stdout ---\n" + tail(out) + "\n--- stderr ---\n" + tail(err);
  return d;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  TempDir io;
  std::string out_path = io.path() + "/stdout";
  std::string err_path = io.path() + "/stderr";
  auto env = build_env(options);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(argv, env, out_path, err_path, options.workdir, parent);
  ProcessResult r;
  if (!wait_for(pid, options.timeout, r)) {
    r.timed_out = true;
    ::kill(pid, SIGKILL);
    wait_for(pid, std::chrono::milliseconds(10000), r);
  }
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

Daemon::Daemon(std::vector<std::string> extra_args, bool start_now)
    : extra_(std::move(extra_args)) {
  if (start_now) start();
}

Daemon::~Daemon() {
  if (pid_ > 0) {
    try {
      kill9();
    } catch (...) {
    }
  }
  remember_logs();
}

void Daemon::remember_logs() {
  for (int run = 1; run <= run_; ++run) {
    pending_logs().push_back("--- " + root() + " run " + std::to_string(run) + " ---\n" +
                             tail(read_file(log_path(run)), 8000));
  }
  run_ = 0;
}

std::vector<std::string> web_args(std::vector<std::string> more) {
  std::vector<std::string> args{"--ws-listen", "127.0.0.1:0"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string Daemon::socket_path() const {
  auto named = std::find(extra_.begin(), extra_.end(), "--socket");
  if (named != extra_.end() && named + 1 != extra_.end()) return *(named + 1);
  return data_dir() + "/tenured.sock";
}

std::vector<std::string> Daemon::argv() const {
  std::vector<std::string> a{tenured_path(), "--data-dir", data_dir()};
  if (std::find(extra_.begin(), extra_.end(), "--socket") == extra_.end()) {
    a.insert(a.end(), {"--socket", socket_path()});
  }
  if (std::find(extra_.begin(), extra_.end(), "--ws-listen") == extra_.end()) {
    a.insert(a.end(), {"--ws-listen", "off"});
  }
  a.insert(a.end(), extra_.begin(), extra_.end());
  return a;
}

unsigned short Daemon::web_port() const {
  // tenured logs "HTTP and WebSocket on http://HOST:PORT" before its socket accepts.
  static const std::regex kListening(R"(HTTP and WebSocket on http://[^ ]*:([0-9]+))");
  std::smatch match;
  std::string text = log();
  if (!std::regex_search(text, match, kListening)) {
    throw std::runtime_error("tenured did not log its HTTP/WebSocket port; its output:\n" +
                             tail(text));
  }
  return static_cast<unsigned short>(std::stoi(match[1].str()));
}

std::string Daemon::ws_token() const {
  std::string token = read_file(data_dir() + "/ws.token");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  return token;
}

std::string Daemon::log_path(int run) const {
  return root() + "/tenured." + std::to_string(run) + ".log";
}

std::string Daemon::log() const { return run_ ? read_file(log_path(run_)) : std::string(); }

void Daemon::start(std::chrono::milliseconds ready_timeout) {
  spawn();
  wait_ready(ready_timeout);
}

void Daemon::spawn() {
  if (pid_ > 0) throw std::logic_error("tenured already running");
  ++run_;
  std::string log = log_path(run_);
  std::vector<std::string> env = build_env({});
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_child(argv(), env, log, log, "", parent);
  pid_ = pid;
}

void Daemon::wait_ready(std::chrono::milliseconds ready_timeout) {
  std::string log = log_path(run_);
  auto deadline = Clock::now() + ready_timeout;
  std::string last_error;
  for (;;) {
    ProcessResult r;
    if (wait_for(pid_, std::chrono::milliseconds(0), r)) {
      pid_ = -1;
      throw std::runtime_error("tenured exited before accepting connections (" +
                               (r.exited ? "exit " + std::to_string(r.exit_code)
                                         : "signal " + std::to_string(r.signal)) +
                               "); its output:\n" + tail(read_file(log)));
    }
    if (auto c = LineClient::try_connect(socket_path(), &last_error)) return;
    if (Clock::now() >= deadline) {
      std::string out = tail(read_file(log));
      kill9();
      throw std::runtime_error("tenured did not accept connections on " + socket_path() +
                               " within " + std::to_string(ready_timeout.count()) +
                               " ms (last error: " + last_error + "); its output:\n" + out);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

ProcessResult Daemon::terminate(std::chrono::milliseconds timeout) {
  ProcessResult r;
  if (pid_ <= 0) throw std::logic_error("tenured is not running");
  ::kill(pid_, SIGTERM);
  if (!wait_for(pid_, timeout, r)) {
    r.timed_out = true;
    kill9();
    throw std::runtime_error("tenured did not exit within " + std::to_string(timeout.count()) +
                             " ms of SIGTERM; its output:\n" + tail(log()));
  }
  pid_ = -1;
  r.err = log();
  return r;
}

void Daemon::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ProcessResult r;
  wait_for(pid_, std::chrono::milliseconds(30000), r);
  pid_ = -1;
}

void Daemon::restart_after_crash() {
  kill9();
  start();
}

}  // namespace e2e
