#pragma once
// The gate of actor and timer turns: every handler the engine posts holds a ticket until it has
// run (or been destroyed unrun), so that stop() can wait until none of them can touch the engine
// any more. Replies alone are not enough: a turn goes on after it has answered.
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
    explicit Ticket(TurnGate& gate) : gate_(&gate) { gate.open_.fetch_add(1); }
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

  // Waits until no ticket is out. Tickets must no longer be handed out by then (the engine has
  // stopped its timers, its writer and its admissions). False if `timeout` passed first.
  bool wait_idle(std::chrono::milliseconds timeout);

  std::uint64_t open() const { return open_.load(); }

 private:
  void leave();

  std::atomic<std::uint64_t> open_{0};
  std::mutex mutex_;
  std::condition_variable idle_;
};

}  // namespace tenure
