#include "actors/turn_gate.hpp"

namespace tenure {

void TurnGate::leave() {
  std::uint64_t state = state_.load();
  while ((state & ~kClosed) > 1) {
    if (state_.compare_exchange_weak(state, state - 1)) return;
  }
  // Perhaps the last unit: it is given back under the lock, so that a waiter that sees zero
  // (and may destroy the gate) does so only after this thread has let go of the gate.
  std::lock_guard lock(mutex_);
  if (((state_.fetch_sub(1) - 1) & ~kClosed) == 0) idle_.notify_all();
}

bool TurnGate::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, timeout, [&] { return open() == 0; });
}

}  // namespace tenure
