#include "actors/turn_gate.hpp"

namespace tenure {

void TurnGate::leave() {
  std::uint64_t open = open_.load();
  while (open > 1) {
    if (open_.compare_exchange_weak(open, open - 1)) return;
  }
  // Perhaps the last ticket: it is given back under the lock, so that a waiter that sees zero
  // (and may destroy the gate) does so only after this thread has let go of the gate.
  std::lock_guard lock(mutex_);
  if (open_.fetch_sub(1) == 1) idle_.notify_all();
}

bool TurnGate::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, timeout, [&] { return open_.load() == 0; });
}

}  // namespace tenure
