#include "apps/tenure/take_lease.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/output.hpp"
#include "core/duration.hpp"

namespace tenure::cli {
namespace {

using Steady = std::chrono::steady_clock;
using protocol::client_errc;

// A wait without limit is asked for an hour at a time, so that no request carries an absurd
// wait_ms and the reply timeout stays finite.
constexpr Millis kWaitRound = 3'600'000;
// Between tries of an acquire a failover interrupted: the new owner of the key is being chosen.
constexpr auto kRetryPause = std::chrono::milliseconds(200);

std::string waiting_line(const client::Failure& held, const std::string& key) {
  std::string token = std::to_string(held.token.value_or(0));
  if (held.reason == "lock_delay") {
    return "waiting for " + key + " (lock-delay after token " + token + " was lost, " +
           format_duration(held.retry_after_ms.value_or(0)) + " left)…";
  }
  return "waiting for " + key + " (held by " + held.holder.value_or("?") + ", token " + token +
         ")…";
}

bool failover_error(const client::Failure& failure) {
  return failure.is(client_errc::disconnected) || failure.is(client_errc::unavailable) ||
         failure.is(client_errc::timeout);
}

}  // namespace

client::Result<client::Lease> take_lease(client::Client& client, const std::string& key,
                                         client::LeaseOptions options, WaitLimit wait,
                                         Millis retry_for) {
  auto deadline =
      wait ? Steady::now() + std::chrono::milliseconds(*wait) : Steady::time_point::max();
  constexpr auto kNotRetrying = Steady::time_point::max();
  auto retry_until = kNotRetrying;
  // Asked once without waiting first, to learn who holds the key and say so.
  options.wait.reset();
  bool said_waiting = false;
  for (;;) {
    auto lease = client.acquire_lease(key, options);
    if (lease) return lease;
    const client::Failure& failure = lease.error();
    auto now = Steady::now();
    if (failover_error(failure)) {
      if (retry_until == kNotRetrying) retry_until = now + std::chrono::milliseconds(retry_for);
      if (now >= retry_until) return lease;
      std::this_thread::sleep_for(kRetryPause);
      continue;
    }
    if (!failure.is(client_errc::held) || wait == 0 || now >= deadline) return lease;
    if (!said_waiting) std::cerr << "tenure: " << waiting_line(failure, key) << std::endl;
    said_waiting = true;
    retry_until = kNotRetrying;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    options.wait =
        std::chrono::milliseconds(wait ? std::min<Millis>(kWaitRound, left) : kWaitRound);
  }
}

std::string explain_failure(const client::Failure& failure, const std::string& key) {
  if (!failure.is(client_errc::held)) return failure.message;
  return describe_held({.key = key,
                        .reason = failure.reason,
                        .holder = failure.holder,
                        .token = failure.token,
                        .retry_after_ms = failure.retry_after_ms,
                        .expires_at = failure.expires_at_ms});
}

int exit_code(const client::Failure& failure) {
  return failure.is(client_errc::held) ? kExitConflict : kExitError;
}

void warn_if_clamped(std::optional<Millis> granted, std::optional<Millis> asked, const char* flag) {
  if (!asked || !granted || *granted == *asked) return;
  std::cerr << "tenure: warning: " << flag << " " << format_duration(*asked)
            << " is outside the server's limits; the lease has " << format_duration(*granted)
            << '\n';
}

}  // namespace tenure::cli
