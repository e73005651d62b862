#include "apps/tenure/run_command.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/owner.hpp"
#include "apps/tenure/requests.hpp"

namespace tenure::cli {
namespace {

using Steady = std::chrono::steady_clock;
constexpr Steady::time_point kNever = Steady::time_point::max();

// Signals tenure handles itself while the command runs: SIGCHLD to learn of its exit, the rest to
// pass on rather than die and leave the command running unguarded.
sigset_t supervised_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, sig);
  return set;
}

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

// Runs the command and keeps the lease alive until it exits or the lease is lost.
class Supervisor {
 public:
  Supervisor(Client& client, const AcquireParams& lease, Token token, std::optional<Millis> ttl,
             Millis grace)
      : client_(client), lease_(lease), token_(token), grace_(grace) {
    // Renewing at a third of the TTL leaves two more tries before the lease runs out.
    if (ttl) renew_every_ = std::chrono::milliseconds(std::max<Millis>(*ttl / 3, 1));
    next_renew_ = Steady::now() + renew_every_;
  }

  // Returns the command's exit status, or empty when the lease was lost.
  std::optional<int> run(const std::vector<std::string>& command) {
    sigset_t handled = supervised_signals();
    sigset_t original;
    // Blocked before fork, so no SIGCHLD can slip by before the signalfd exists.
    ::sigprocmask(SIG_BLOCK, &handled, &original);
    signal_fd_ = ::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) throw CliError(std::string("signalfd: ") + std::strerror(errno));
    child_ = spawn(command, original);
    while (!child_status_) step();
    ::close(signal_fd_);
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    if (lost_) return std::nullopt;
    return child_status_;
  }

 private:
  void step() {
    pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {connected_ ? client_.fd() : -1, POLLIN, 0}};
    if (::poll(fds, 2, poll_timeout_ms()) < 0 && errno != EINTR) {
      throw CliError(std::string("poll: ") + std::strerror(errno));
    }
    handle_signals();
    // Drained every round, not only when poll says so: lines may already sit in the buffer.
    if (connected_) drain_connection();
    auto now = Steady::now();
    if (!lost_ && connected_ && renew_every_.count() > 0 && now >= next_renew_) {
      pending_renew_ = client_.send([&](RequestId id) {
        return renew_request(id, lease_.key, lease_.owner, std::nullopt, token_);
      });
      next_renew_ = now + renew_every_;
    }
    if (now >= kill_at_) {
      ::kill(child_, SIGKILL);
      kill_at_ = kNever;
    }
  }

  int poll_timeout_ms() const {
    Steady::time_point due = kill_at_;
    if (!lost_ && connected_ && renew_every_.count() > 0) due = std::min(due, next_renew_);
    if (due == kNever) return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(due - Steady::now()).count();
    return static_cast<int>(std::max<std::int64_t>(left, 0));
  }

  void handle_signals() {
    signalfd_siginfo info;
    while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      if (info.ssi_signo == SIGCHLD) {
        int status = 0;
        if (::waitpid(child_, &status, WNOHANG) == child_) child_status_ = exit_status_of(status);
      } else if (info.ssi_code != SI_KERNEL) {
        // Sent to tenure by a process: pass it on. A terminal's ^C or hang-up (SI_KERNEL) went to
        // the whole foreground process group, the command included, so it is not sent twice.
        ::kill(child_, static_cast<int>(info.ssi_signo));
      }
    }
  }

  void drain_connection() {
    try {
      while (auto message = client_.receive(0)) handle(*message);
    } catch (const ConnectionClosed&) {
      // The lease was taken with release_on_disconnect: without the connection it is gone.
      connected_ = false;
      lose("the connection to tenured closed");
    }
  }

  void handle(const Message& message) {
    Fields f = message.fields();
    if (message.event() == "lost" && string_field(f, "key") == lease_.key &&
        uint_field(f, "token") == token_) {
      lose(std::string(string_field(f, "reason").value_or("lost")));
    } else if (pending_renew_ != 0 && message.id() == pending_renew_) {
      pending_renew_ = 0;
      if (message.status() == "not_holder") {
        lose("renew refused: " + explain_failure(message));
      } else if (message.status() != "renewed") {
        // Transient (e.g. unavailable): the next renewal may succeed before the lease runs out.
        std::cerr << "tenure: renewing " << lease_.key << " failed: " << explain_failure(message)
                  << '\n';
      }
    }
  }

  void lose(const std::string& why) {
    if (lost_) return;
    lost_ = true;
    std::cerr << "tenure: lost the lease on " << lease_.key << " (" << why
              << "); stopping the command\n";
    ::kill(child_, SIGTERM);
    kill_at_ = Steady::now() + std::chrono::milliseconds(grace_);
  }

  Client& client_;
  const AcquireParams& lease_;
  Token token_;
  Millis grace_;
  std::chrono::milliseconds renew_every_{0};  // 0: open-ended, nothing to renew
  Steady::time_point next_renew_;
  int signal_fd_ = -1;
  pid_t child_ = -1;
  std::optional<int> child_status_;
  RequestId pending_renew_ = 0;  // 0: none; ids start at 1
  bool connected_ = true;
  bool lost_ = false;
  Steady::time_point kill_at_ = kNever;  // SIGKILL due, after the grace period
};

}  // namespace

int run_command(const Globals& g, const RunArgs& args) {
  AcquireParams lease;
  lease.key = args.key;
  lease.owner = owner_or_fresh(args.owner, /*announce=*/false);
  lease.ttl = args.ttl;
  lease.wait = args.wait;
  lease.release_on_disconnect = true;
  Client client = connect(g, args.wait);
  Message reply = client.call([&](RequestId id) { return acquire_request(id, lease); });
  if (int code = exit_code(reply, "acquired"); code != kExitOk) {
    std::cerr << "tenure: " << explain_failure(reply) << '\n';
    return code;
  }
  Token token = uint_field(reply.fields(), "token").value_or(0);
  ::setenv("TENURE_KEY", lease.key.c_str(), 1);
  ::setenv("TENURE_TOKEN", std::to_string(token).c_str(), 1);
  ::setenv("TENURE_OWNER", lease.owner.c_str(), 1);

  Supervisor supervisor(client, lease, token, uint_field(reply.fields(), "ttl_ms"), args.grace);
  std::optional<int> status = supervisor.run(args.command);
  if (!status) return kExitLost;
  try {
    Message released = client.call(
        [&](RequestId id) { return release_request(id, lease.key, lease.owner, token); });
    if (exit_code(released, "released") != kExitOk) {
      std::cerr << "tenure: releasing " << lease.key << ": " << explain_failure(released) << '\n';
    }
  } catch (const CliError& e) {
    // The command's status matters more; the daemon frees the key when the connection closes.
    std::cerr << "tenure: releasing " << lease.key << ": " << e.what() << '\n';
  }
  return *status;
}

}  // namespace tenure::cli
