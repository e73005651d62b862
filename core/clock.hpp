#pragma once
// Time for the lease engine. All lease arithmetic is in Millis on one scale that looks like Unix
// wall time but advances monotonically while the process runs (§4): stepping the wall clock
// neither expires nor extends a lease, yet persisted deadlines stay meaningful across restarts.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace tenure {

using Millis = std::int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Millis now() const = 0;
};

// Steady clock anchored to the wall clock once, at construction.
class SystemClock final : public Clock {
 public:
  SystemClock();
  Millis now() const override;
  // Moves the scale forward so that now() >= floor, and returns by how much. A ledger written
  // before the wall clock was stepped back holds times ahead of the wall: continuing from its
  // newest time keeps persisted deadlines from lasting longer than they were granted.
  // REQUIRES: no other thread reads the clock yet.
  Millis not_before(Millis floor);

 private:
  std::chrono::steady_clock::time_point steady_origin_;
  Millis wall_origin_;
};

// Test clock: time moves only when told to.
class MockClock final : public Clock {
 public:
  explicit MockClock(Millis start = 1'700'000'000'000) : now_(start) {}
  Millis now() const override { return now_.load(); }
  void set(Millis t) { now_.store(t); }
  void advance(Millis d) { now_.fetch_add(d); }

 private:
  std::atomic<Millis> now_;
};

// RFC 3339 UTC with millisecond precision: "2026-11-30T03:55:33.123Z".
std::string format_time(Millis t);

// The same text in place, for writers that copy it on at once (replies: no allocation per time).
class TimeText {
 public:
  explicit TimeText(Millis t);
  std::string_view view() const { return {chars_, size_}; }

 private:
  char chars_[32];
  std::size_t size_ = 0;
};

}  // namespace tenure
