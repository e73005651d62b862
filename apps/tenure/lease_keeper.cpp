#include "apps/tenure/lease_keeper.hpp"

#include <algorithm>
#include <iostream>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/session.hpp"

namespace tenure::cli {

using Steady = std::chrono::steady_clock;

LeaseKeeper::LeaseKeeper(Client& client, std::string key, std::string owner, const Message& reply)
    : client_(client),
      key_(std::move(key)),
      owner_(std::move(owner)),
      token_(uint_field(reply.fields(), "token").value_or(0)) {
  // Renewing at a third of the TTL leaves two more tries before the lease runs out.
  if (auto ttl = uint_field(reply.fields(), "ttl_ms")) {
    renew_every_ = std::chrono::milliseconds(std::max<std::uint64_t>(*ttl / 3, 1));
  }
  next_renew_ = Steady::now() + renew_every_;
}

int LeaseKeeper::fd() const { return connected_ ? client_.fd() : -1; }

int LeaseKeeper::timeout_ms() const {
  if (lost_ || renew_every_.count() == 0) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(next_renew_ - Steady::now()).count();
  return static_cast<int>(std::max<std::int64_t>(left, 0));
}

void LeaseKeeper::service() {
  if (!connected_) return;
  try {
    // Drained every round, not only when poll says so: lines may already sit in the buffer.
    while (auto message = client_.receive(0)) handle(*message);
    auto now = Steady::now();
    if (!lost_ && renew_every_.count() > 0 && now >= next_renew_) {
      pending_renew_ = client_.send(
          [&](RequestId id) { return renew_request(id, key_, owner_, std::nullopt, token_); });
      next_renew_ = now + renew_every_;
    }
  } catch (const ConnectionClosed&) {
    connected_ = false;
    lose("the connection to tenured closed");
  }
}

void LeaseKeeper::handle(const Message& message) {
  Fields f = message.fields();
  if (message.event() == "lost" && string_field(f, "key") == key_ &&
      uint_field(f, "token") == token_) {
    lose(std::string(string_field(f, "reason").value_or("lost")));
  } else if (pending_renew_ != 0 && message.id() == pending_renew_) {
    pending_renew_ = 0;
    if (message.status() == "not_holder") {
      lose("renew refused: " + explain_failure(message));
    } else if (message.status() != "renewed") {
      // Transient (e.g. unavailable): the next renewal may succeed before the lease runs out.
      std::cerr << "tenure: renewing " << key_ << " failed: " << explain_failure(message) << '\n';
    }
  }
}

void LeaseKeeper::lose(std::string why) {
  if (lost_) return;
  std::cerr << "tenure: lost the lease on " << key_ << ", token " << token_ << " (" << why << ")\n";
  lost_ = std::move(why);
}

void LeaseKeeper::release() {
  if (lost_ || !connected_) return;
  try {
    Message released =
        client_.call([&](RequestId id) { return release_request(id, key_, owner_, token_); });
    if (exit_code(released, "released") != kExitOk) {
      std::cerr << "tenure: releasing " << key_ << ": " << explain_failure(released) << '\n';
    }
  } catch (const CliError& e) {
    // The caller's outcome matters more; the daemon frees the key when the connection closes.
    std::cerr << "tenure: releasing " << key_ << ": " << e.what() << '\n';
  }
}

}  // namespace tenure::cli
