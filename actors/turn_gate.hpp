#pragma once
// A gate that counts work in flight, so that stop() can wait until none of it can touch the
// engine any more: one atomic word, no lock unless the count reaches zero. The engine has two:
// admitted requests (closed at stop, answered before the writer stops) and actor and timer turns
// (every handler the engine posts holds a ticket until it has run or been destroyed unrun;
// replies alone are not enough, a turn goes on after it has answered).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>

namespace tenure {

class TurnGate {
 public:
  // A turn's place in the gate, given back when the ticket is destroyed.
  class Ticket {
   public:
    explicit Ticket(TurnGate& gate) : gate_(&gate) { gate.state_.fetch_add(1); }
    Ticket(Ticket&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket() {
      if (gate_) gate_->leave();
    }

   private:
    TurnGate* gate_;
  };

  // A handler that holds a ticket. The ticket is declared first so that it is destroyed last:
  // the handler's captures (actor references, replies) go before the turn counts as done.
  template <typename Fn>
  class Counted {
   public:
    Counted(TurnGate& gate, Fn fn) : ticket_(gate), fn_(std::move(fn)) {}
    template <typename... Args>
    void operator()(Args&&... args) {
      fn_(std::forward<Args>(args)...);
    }

   private:
    Ticket ticket_;
    Fn fn_;
  };

  template <typename Fn>
  Counted<std::decay_t<Fn>> counted(Fn&& fn) {
    return Counted<std::decay_t<Fn>>(*this, std::forward<Fn>(fn));
  }

  // Counts one unit of work in, unless the gate is closed. The check and the count are one
  // atomic step, so close() either sees this unit or this call sees the gate closed.
  bool enter() {
    if ((state_.fetch_add(1) & kClosed) == 0) return true;
    leave();
    return false;
  }
  // Counts out a unit of work. REQUIRES: an enter() that returned true.
  void leave();
  // Refuses every later enter(); tickets are still counted. False if it was closed already.
  bool close() { return (state_.fetch_or(kClosed) & kClosed) == 0; }
  bool closed() const { return (state_.load() & kClosed) != 0; }

  // Waits until nothing is counted in. Tickets must no longer be handed out by then (the engine
  // has stopped its timers, its writer and its admissions). False if `timeout` passed first.
  bool wait_idle(std::chrono::milliseconds timeout);

  std::uint64_t open() const { return state_.load() & ~kClosed; }

 private:
  static constexpr std::uint64_t kClosed = std::uint64_t{1} << 63;

  std::atomic<std::uint64_t> state_{0};  // kClosed | the count
  std::mutex mutex_;
  std::condition_variable idle_;
};

}  // namespace tenure
