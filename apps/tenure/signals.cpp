#include "apps/tenure/signals.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "apps/tenure/failure.hpp"

namespace tenure::cli {

BlockedSignals::BlockedSignals(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : signals) sigaddset(&set, sig);
  // Blocked before the fd exists (and before any fork), so none slips by.
  ::sigprocmask(SIG_BLOCK, &set, &original_);
  fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) {
    int err = errno;
    ::sigprocmask(SIG_SETMASK, &original_, nullptr);
    throw CliError(std::string("signalfd: ") + std::strerror(err));
  }
}

BlockedSignals::~BlockedSignals() {
  ::close(fd_);
  ::sigprocmask(SIG_SETMASK, &original_, nullptr);
}

std::vector<signalfd_siginfo> BlockedSignals::take() {
  std::vector<signalfd_siginfo> out;
  signalfd_siginfo info;
  while (::read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) out.push_back(info);
  return out;
}

}  // namespace tenure::cli
