#include "apps/tenure/signals.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "apps/tenure/failure.hpp"

namespace tenure::cli {

SignalMask::SignalMask(std::initializer_list<int> signals) {
  sigemptyset(&blocked_);
  for (int sig : signals) sigaddset(&blocked_, sig);
  ::pthread_sigmask(SIG_BLOCK, &blocked_, &original_);
}

SignalMask::~SignalMask() { ::pthread_sigmask(SIG_SETMASK, &original_, nullptr); }

BlockedSignals::BlockedSignals(std::initializer_list<int> signals) : mask_(signals) {
  fd_ = ::signalfd(-1, &mask_.blocked(), SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) throw CliError(std::string("signalfd: ") + std::strerror(errno));
}

BlockedSignals::~BlockedSignals() { ::close(fd_); }

std::vector<signalfd_siginfo> BlockedSignals::take() {
  std::vector<signalfd_siginfo> out;
  signalfd_siginfo info;
  while (::read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) out.push_back(info);
  return out;
}

}  // namespace tenure::cli
