#include "apps/tenure/lease_keeper.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "apps/tenure/failure.hpp"

namespace tenure::cli {

struct LeaseKeeper::Pipe {
  int read = -1;
  int write = -1;
  ~Pipe() {
    ::close(read);
    ::close(write);
  }
};

LeaseKeeper::LeaseKeeper() : pipe_(std::make_shared<Pipe>()) {
  int fds[2];
  // CLOEXEC: not for the command `run` starts; non-blocking: drained without waiting.
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw CliError(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  pipe_->read = fds[0];
  pipe_->write = fds[1];
}

std::function<void(std::string_view)> LeaseKeeper::on_lost() const {
  return [pipe = pipe_](std::string_view) {
    char wake = 1;
    // A full pipe has woken the loop already.
    [[maybe_unused]] ssize_t n = ::write(pipe->write, &wake, 1);
  };
}

void LeaseKeeper::keep(client::Lease lease) { lease_.emplace(std::move(lease)); }

int LeaseKeeper::fd() const { return lost_ ? -1 : pipe_->read; }

void LeaseKeeper::service() {
  char buf[64];
  while (::read(pipe_->read, buf, sizeof buf) > 0) {
  }
  if (lost_ || !lease_ || !lease_->lost()) return;
  lost_ = lease_->lost_reason();
  std::cerr << "tenure: lost the lease on " << lease_->key() << ", token " << lease_->token()
            << " (" << *lost_ << ")\n";
}

void LeaseKeeper::release() {
  if (lost_ || !lease_) return;
  auto released = lease_->release();
  if (!released) {
    // The caller's outcome matters more; the lease ends by itself (with a connection-bound one's
    // connection, or at its deadline).
    std::cerr << "tenure: releasing " << lease_->key() << ": " << released.error().message << '\n';
  }
}

}  // namespace tenure::cli
