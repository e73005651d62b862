#include "apps/tenure/take_lease.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "apps/tenure/failure.hpp"
#include "core/duration.hpp"

namespace tenure::cli {
namespace {

using Steady = std::chrono::steady_clock;

// A wait without limit is asked for an hour at a time, so that no request carries an absurd
// wait_ms and the reply timeout stays finite.
constexpr Millis kWaitRound = 3'600'000;
// Time allowed beyond a queued acquire's wait for the server to answer it.
constexpr Millis kReplyMargin = 5'000;

std::string waiting_line(const Message& held, std::string_view key) {
  Fields f = held.fields();
  std::string token = std::to_string(uint_field(f, "token").value_or(0));
  if (string_field(f, "reason") == "lock_delay") {
    return "waiting for " + std::string(key) + " (lock-delay after token " + token + " was lost, " +
           format_duration(uint_field(f, "retry_after_ms").value_or(0)) + " left)…";
  }
  return "waiting for " + std::string(key) + " (held by " +
         std::string(string_field(f, "holder").value_or("?")) + ", token " + token + ")…";
}

Message acquire(Client& client, AcquireParams lease, Millis wait) {
  if (wait > 0) lease.wait = wait;
  RequestId id = client.send([&](RequestId rid) { return acquire_request(rid, lease); });
  return client.await_reply(id, std::max<Millis>(wait, 0) + kReplyMargin);
}

}  // namespace

Message take_lease(Client& client, const AcquireParams& lease, WaitLimit wait) {
  auto deadline =
      wait ? Steady::now() + std::chrono::milliseconds(*wait) : Steady::time_point::max();
  // Asked once without waiting first, to learn who holds the key and say so.
  Message reply = acquire(client, lease, 0);
  if (reply.status() == "held" && wait != 0) {
    std::cerr << "tenure: " << waiting_line(reply, lease.key) << std::endl;
    while (reply.status() == "held") {
      Millis round = kWaitRound;
      if (wait) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Steady::now()).count();
        if (left <= 0) break;
        round = std::min<Millis>(round, left);
      }
      reply = acquire(client, lease, round);
    }
  }
  if (reply.status() == "acquired" && !bool_field(reply.fields(), "fresh").value_or(true)) {
    throw CliError("owner " + lease.owner + " already held " + lease.key +
                   "; that tenure is not this command's, so it is left alone");
  }
  return reply;
}

void warn_if_clamped(const Message& reply, std::optional<Millis> asked, const char* flag) {
  auto used = uint_field(reply.fields(), "ttl_ms");
  if (!asked || !used || static_cast<Millis>(*used) == *asked) return;
  std::cerr << "tenure: warning: " << flag << " " << format_duration(*asked)
            << " is outside the server's limits; the lease has " << format_duration(*used) << '\n';
}

}  // namespace tenure::cli
