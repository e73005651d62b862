#pragma once
// Signals taken as input: blocked for the process and read from a signalfd in a poll() loop, so
// that `run` and `hold` end tidily (release, pass on) instead of dying mid-lease.
#include <signal.h>
#include <sys/signalfd.h>

#include <initializer_list>
#include <vector>

namespace tenure::cli {

class BlockedSignals {
 public:
  // Throws CliError when the signalfd cannot be made.
  explicit BlockedSignals(std::initializer_list<int> signals);
  ~BlockedSignals();  // restores the original mask
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  int fd() const { return fd_; }
  // The mask before blocking: what a child process should start with.
  const sigset_t& original() const { return original_; }
  // The signals that arrived since the last call.
  std::vector<signalfd_siginfo> take();

 private:
  sigset_t original_;
  int fd_ = -1;
};

}  // namespace tenure::cli
