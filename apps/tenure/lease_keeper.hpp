#pragma once
// Keeps a tenure that `run` or `hold` took, for their poll() loop. The client library's Lease
// renews it every third of its TTL on the client's thread, through the next endpoint when the
// connection's node is lost; a loss wakes fd().
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "apps/tenure/requests.hpp"
#include "client/client.hpp"

namespace tenure::cli {

class LeaseKeeper {
 public:
  LeaseKeeper();  // throws CliError when its pipe cannot be made

  // The LeaseOptions::on_lost of the lease to keep: it wakes fd() (from any thread).
  std::function<void(std::string_view)> on_lost() const;
  // REQUIRES: `lease` was taken with on_lost() as its callback.
  void keep(client::Lease lease);

  Token token() const { return lease_->token(); }
  // For poll(): readable once the lease was lost; -1 after service() noticed.
  int fd() const;
  // Notices a loss and says so on stderr. Call after every poll().
  void service();
  // Why the lease was lost (expired, revoked, a renewal refused, disconnected from the daemon
  // of a connection-bound lease, or no renewal through any endpoint before the deadline), once
  // it was.
  const std::optional<std::string>& lost() const { return lost_; }
  // Releases this tenure (by its token, so never a later one); problems go to stderr.
  void release();

 private:
  struct Pipe;
  std::shared_ptr<Pipe> pipe_;  // shared with on_lost(), which may run after we are gone
  std::optional<client::Lease> lease_;
  std::optional<std::string> lost_;
};

}  // namespace tenure::cli
