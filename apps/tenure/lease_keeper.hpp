#pragma once
// Keeps a tenure that `run` or `hold` created alive on its connection: renews it every third of
// its TTL and notices when it is lost. Its owner drives it from a poll() loop.
#include <chrono>
#include <optional>
#include <string>

#include "apps/tenure/requests.hpp"

namespace tenure::cli {

class LeaseKeeper {
 public:
  // REQUIRES: `reply` is the fresh `acquired` reply for `key` and `owner` on `client`, and the
  // lease was taken with release_on_disconnect (so without the connection it is gone).
  LeaseKeeper(Client& client, std::string key, std::string owner, const Message& reply);

  Token token() const { return token_; }
  // The connection to poll for input, or -1 once it closed.
  int fd() const;
  // Milliseconds until the next renewal is due, or -1 when none is (open-ended, or lost).
  int timeout_ms() const;
  // Reads what the server sent and renews when due. Call after every poll().
  void service();
  // Why the lease was lost (a `lost` event, a renewal refused, the connection closed), once it
  // was.
  const std::optional<std::string>& lost() const { return lost_; }
  // Releases this tenure (by its token, so never a later one); problems go to stderr.
  void release();

 private:
  void handle(const Message& message);
  void lose(std::string why);

  Client& client_;
  std::string key_;
  std::string owner_;
  Token token_;
  std::chrono::milliseconds renew_every_{0};  // 0: open-ended, nothing to renew
  std::chrono::steady_clock::time_point next_renew_;
  RequestId pending_renew_ = 0;  // 0: none; ids start at 1
  bool connected_ = true;
  std::optional<std::string> lost_;
};

}  // namespace tenure::cli
