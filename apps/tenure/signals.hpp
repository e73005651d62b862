#pragma once
// Signals taken as input: blocked for the process and read from a signalfd in a poll() loop, so
// that `run` and `hold` end tidily (release, pass on) instead of dying mid-lease.
#include <signal.h>
#include <sys/signalfd.h>

#include <initializer_list>
#include <vector>

namespace tenure::cli {

// The signals `run` and `hold` take as input (hold has no use for SIGCHLD and SIGQUIT).
inline constexpr std::initializer_list<int> kRunSignals = {SIGCHLD, SIGINT, SIGTERM, SIGHUP,
                                                           SIGQUIT};

// Blocks signals in the calling thread while it lives. Threads started meanwhile inherit the
// mask and keep it: a signal sent to the process then goes to a thread that does not block it.
class SignalMask {
 public:
  explicit SignalMask(std::initializer_list<int> signals);
  ~SignalMask();  // restores the original mask
  SignalMask(const SignalMask&) = delete;
  SignalMask& operator=(const SignalMask&) = delete;

  const sigset_t& blocked() const { return blocked_; }
  const sigset_t& original() const { return original_; }

 private:
  sigset_t blocked_;
  sigset_t original_;
};

class BlockedSignals {
 public:
  // Throws CliError when the signalfd cannot be made.
  explicit BlockedSignals(std::initializer_list<int> signals);
  ~BlockedSignals();
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  int fd() const { return fd_; }
  // The mask before blocking: what a child process should start with.
  const sigset_t& original() const { return mask_.original(); }
  // The signals that arrived since the last call.
  std::vector<signalfd_siginfo> take();

 private:
  // Blocked before the fd exists (and before any fork), so none slips by.
  SignalMask mask_;
  int fd_ = -1;
};

}  // namespace tenure::cli
