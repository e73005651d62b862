#pragma once
// Runs a real tenured for end-to-end tests: in a fresh 0700 temporary directory, started with
// fork/exec, ready when its socket accepts, stopped with SIGTERM or SIGKILL, restartable on the
// same data dir. Its stdout and stderr go to a log file per run; when a test case fails, the logs
// of the daemons it used are printed (see the listener in daemon.cpp).
//
// Also: running other processes (the `tenure` CLI, a second tenured) with a timeout.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/line_client.hpp"

namespace e2e {

// Paths of the binaries under test (compile definitions from CMake).
std::string tenured_path();
std::string tenure_cli_path();

// True when the tests run as root (uid 0).
bool running_as_root();

// A fresh directory under $TMPDIR (or /tmp), mode 0700, removed recursively on destruction unless
// TENURE_E2E_KEEP is set in the environment.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct ProcessResult {
  bool exited = false;  // exited normally (exit_code valid)
  int exit_code = -1;
  int signal = 0;  // the signal that ended it, if any
  bool timed_out = false;
  std::string out;
  std::string err;
  std::string describe() const;  // "exit 4" / "killed by signal 9 (timed out)" + output
};

struct ProcessOptions {
  std::vector<std::string> set_env;    // NAME=VALUE
  std::vector<std::string> unset_env;  // NAME
  std::string workdir;                 // empty: inherit
  std::chrono::milliseconds timeout{30000};
};

// Runs argv[0] (a path) with argv, waits up to the timeout (then SIGKILLs it), captures output.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Extra arguments that turn the HTTP/WebSocket listener on, on a free loopback port.
std::vector<std::string> web_args(std::vector<std::string> more = {});

class Daemon {
 public:
  // A daemon in a fresh temp dir with `--data-dir DIR/data --socket DIR/data/tenured.sock
  // --ws-listen off` plus extra_args (which may name their own --socket and --ws-listen). Started
  // (and waited for) unless start_now is false.
  explicit Daemon(std::vector<std::string> extra_args = {}, bool start_now = true);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const std::string& root() const { return dir_.path(); }
  std::string data_dir() const { return root() + "/data"; }
  // DIR/data/tenured.sock, or the path extra_args name with --socket.
  std::string socket_path() const;
  std::vector<std::string> argv() const;
  // The extra arguments of the next start().
  std::vector<std::string>& extra_args() { return extra_; }

  // Starts tenured and waits until its socket accepts a connection. Throws with its log if it
  // exits first or is not ready within the timeout.
  void start(std::chrono::milliseconds ready_timeout = std::chrono::milliseconds(30000));
  // start() in two halves, so that several daemons can come up together.
  void spawn();
  void wait_ready(std::chrono::milliseconds ready_timeout = std::chrono::milliseconds(30000));
  // SIGTERM and wait; returns how it ended. Throws (after SIGKILL) if it does not exit in time.
  ProcessResult terminate(std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));
  // SIGKILL and reap.
  void kill9();
  // kill9() if running, then start() on the same data dir.
  void restart_after_crash();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  LineClient connect() const { return LineClient(socket_path()); }
  // The port of the HTTP/WebSocket listener of the current run, from its log (see web_args).
  unsigned short web_port() const;
  // The bearer token of WebSocket mutations (<data-dir>/ws.token, without its newline).
  std::string ws_token() const;
  // The log (stdout+stderr) of the current or last run.
  std::string log() const;

 private:
  std::string log_path(int run) const;
  void remember_logs();

  TempDir dir_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
  int run_ = 0;
};

// Reads a whole file (empty if unreadable).
std::string read_file(const std::string& path);
// The last `max` bytes of text.
std::string tail(const std::string& text, std::size_t max = 6000);

}  // namespace e2e
