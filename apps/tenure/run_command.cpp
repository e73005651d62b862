#include "apps/tenure/run_command.hpp"

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/lease_keeper.hpp"
#include "apps/tenure/owner.hpp"
#include "apps/tenure/signals.hpp"
#include "core/duration.hpp"

namespace tenure::cli {
namespace {

using Steady = std::chrono::steady_clock;
constexpr Steady::time_point kNever = Steady::time_point::max();

// Shell conventions: the exit code, or 128 + the signal that killed the process.
int exit_status_of(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

// Starts the command with the original signal mask; the lease's identity is already in the
// environment. Exec failures exit 127 (not found) or 126, as in a shell.
pid_t spawn(const std::vector<std::string>& command, const sigset_t& original_mask) {
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = ::fork();
  if (pid < 0) throw CliError(std::string("cannot start a process: ") + std::strerror(errno));
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    ::execvp(argv[0], argv.data());
    int err = errno;
    ::dprintf(STDERR_FILENO, "tenure: cannot run %s: %s\n", argv[0], std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
  }
  return pid;
}

int until(Steady::time_point due) {
  if (due == kNever) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(due - Steady::now()).count();
  return static_cast<int>(std::max<std::int64_t>(left, 0));
}

// Whether hold should end with its input. Not when there is none to end: stdin closed, or
// /dev/null (as for a `tenure hold KEY &` in a script); only signals end the hold then.
bool input_can_end() {
  struct stat in = {};
  struct stat null = {};
  if (::fstat(STDIN_FILENO, &in) != 0) return false;
  return ::stat("/dev/null", &null) != 0 || in.st_dev != null.st_dev || in.st_ino != null.st_ino;
}

// With several sockets (a cluster's nodes) the lease must outlive the node it was taken through,
// so it is bound to its TTL, not to its connection; without --ttl it lasts 1m, as etcdctl lock's
// does, so that a `tenure` killed -9 leaves the key held that long at most.
constexpr Millis kFailoverTtl = 60'000;

// The client and the keeper of the new tenure, or the exit code when there is none (the failure
// already explained on stderr).
struct Taken {
  std::optional<client::Client> client;
  std::optional<LeaseKeeper> keeper;
  int code = kExitOk;
};

Taken take(const Globals& g, const HoldArgs& args) {
  client::ClientOptions options = client_options(g);
  bool failover = !options.endpoints.empty();
  std::optional<Millis> ttl = args.ttl;
  if (failover) {
    if (!ttl) ttl = kFailoverTtl;
    // A node that stalls is left for the next one before a renewal's time is up.
    options.timeout = std::chrono::milliseconds(std::min(g.timeout, std::max<Millis>(*ttl / 3, 1)));
  }
  Taken taken;
  {
    // The client's threads must not take the signals that run's and hold's loops read.
    SignalMask for_client_threads(kRunSignals);
    auto connected = client::Client::connect(options);
    if (!connected) throw CliError(connected.error().message);
    taken.client.emplace(std::move(*connected));
  }
  LeaseKeeper& keeper = taken.keeper.emplace();
  client::LeaseOptions lease{
      .ttl = ttl ? std::optional(std::chrono::milliseconds(*ttl)) : std::nullopt,
      .owner = unique_owner(args.owner_prefix),
      // Connection-bound when there is one daemon: if tenure dies, the key is free at once.
      .release_on_disconnect = !failover,
      .on_lost = keeper.on_lost()};
  auto taken_lease =
      take_lease(*taken.client, args.key, std::move(lease), args.wait, failover ? g.timeout : 0);
  if (!taken_lease) {
    std::cerr << "tenure: " << explain_failure(taken_lease.error(), args.key) << '\n';
    taken.code = exit_code(taken_lease.error());
    taken.keeper.reset();
    return taken;
  }
  auto granted = taken_lease->ttl();
  warn_if_clamped(granted ? std::optional<Millis>(granted->count()) : std::nullopt, args.ttl,
                  "--ttl");
  keeper.keep(std::move(*taken_lease));
  return taken;
}

// Runs the command and keeps the lease alive until the command exits. Returns its exit status,
// or empty when the lease was lost (the command was then stopped).
std::optional<int> supervise(LeaseKeeper& keeper, const RunArgs& args) {
  // SIGCHLD to learn of the command's exit; the rest to pass on rather than die and leave the
  // command running unguarded.
  BlockedSignals signals(kRunSignals);
  pid_t child = spawn(args.command, signals.original());
  std::optional<int> status;
  Steady::time_point kill_at = kNever;  // SIGKILL due, after the grace period
  while (!status) {
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {keeper.fd(), POLLIN, 0}};
    if (::poll(fds, 2, until(kill_at)) < 0 && errno != EINTR) {
      throw CliError(std::string("poll: ") + std::strerror(errno));
    }
    for (const signalfd_siginfo& info : signals.take()) {
      if (info.ssi_signo == SIGCHLD) {
        int wait_status = 0;
        if (::waitpid(child, &wait_status, WNOHANG) == child) status = exit_status_of(wait_status);
      } else if (info.ssi_code != SI_KERNEL) {
        // Sent to tenure by a process: pass it on. A terminal's ^C or hang-up (SI_KERNEL) went to
        // the whole foreground process group, the command included, so it is not sent twice.
        ::kill(child, static_cast<int>(info.ssi_signo));
      }
    }
    bool was_lost = keeper.lost().has_value();
    keeper.service();
    if (!was_lost && keeper.lost()) {
      std::cerr << "tenure: stopping the command (SIGTERM, SIGKILL after "
                << format_duration(args.grace) << ")\n";
      ::kill(child, SIGTERM);
      kill_at = Steady::now() + std::chrono::milliseconds(args.grace);
    }
    if (Steady::now() >= kill_at) {
      ::kill(child, SIGKILL);
      kill_at = kNever;
    }
  }
  if (keeper.lost()) return std::nullopt;
  return status;
}

}  // namespace

int run_command(const Globals& g, const RunArgs& args) {
  Taken taken = take(g, args);
  if (!taken.keeper) return taken.code;
  LeaseKeeper& keeper = *taken.keeper;
  ::setenv("TENURE_KEY", args.key.c_str(), 1);
  ::setenv("TENURE_TOKEN", std::to_string(keeper.token()).c_str(), 1);
  // An owner in the command's environment would let a `tenure acquire` or `renew` in it act as
  // somebody's tenure of this key; the run's own owner is its alone.
  ::unsetenv("TENURE_OWNER");
  std::optional<int> status = supervise(keeper, args);
  if (!status) return kExitLost;
  keeper.release();
  return *status;
}

int hold_command(const Globals& g, const HoldArgs& args) {
  Taken taken = take(g, args);
  if (!taken.keeper) return taken.code;
  LeaseKeeper& keeper = *taken.keeper;
  BlockedSignals signals({SIGINT, SIGTERM, SIGHUP});
  std::cout << "holding " << args.key << ", token " << keeper.token()
            << "; Ctrl-C, SIGTERM or the end of input releases it" << std::endl;
  bool watch_stdin = input_can_end();
  for (;;) {
    pollfd fds[3] = {{signals.fd(), POLLIN, 0},
                     {keeper.fd(), POLLIN, 0},
                     {watch_stdin ? STDIN_FILENO : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) {
      throw CliError(std::string("poll: ") + std::strerror(errno));
    }
    if (!signals.take().empty()) break;
    if (fds[2].revents != 0) {
      char buf[4096];
      ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
    }
    keeper.service();
    if (keeper.lost()) return kExitLost;
  }
  keeper.release();
  return kExitOk;
}

}  // namespace tenure::cli
