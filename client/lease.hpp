#pragma once
// tenure::client::Lease: the RAII handle of one tenure. It holds the key while it lives, renews
// itself at ttl/3 on the client's io thread, reports loss (a flag to poll, a wait, a callback),
// and releases with its token when destroyed. Moving transfers ownership; a lost lease is never
// acquired again under the same handle.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "protocol/replies.hpp"
#include "protocol/result.hpp"

namespace tenure::client {

namespace detail {
class Core;
class LeaseState;
}  // namespace detail

class Lease {
 public:
  Lease(Lease&&) noexcept;
  Lease& operator=(Lease&&) noexcept;
  // release(), ignoring its result; on the client's io thread (a callback), which cannot wait
  // for the reply, the release is sent without waiting.
  ~Lease();

  // After release() these still describe the tenure; a moved-from handle has none: "", 0,
  // empty, not lost.
  const std::string& key() const;
  const std::string& owner() const;
  std::uint64_t token() const;  // the fencing token
  // The TTL the server granted (it clamps the one asked for); empty: open-ended.
  std::optional<std::chrono::milliseconds> ttl() const;

  // Whether the tenure ended without our release: expired, revoked, a renew refused, or no
  // renew getting through before the deadline (the connection or the daemon down).
  bool lost() const;
  std::string lost_reason() const;  // "" while held
  // Blocks until lost or the timeout; returns lost().
  bool wait_lost(std::chrono::milliseconds timeout) const;

  // Renews now (the lease does it by itself); re-attaches to a new connection if needed.
  protocol::Result<protocol::Renewed> renew();
  // The fencing check of this tenure.
  protocol::Result<protocol::Valid> check();
  // Stops renewing and releases with the token. Idempotent; a lost lease sends nothing. On the
  // client's io thread it is refused (blocking_on_io_thread) and changes nothing, as every
  // blocking call is there; destroying the Lease there releases it.
  protocol::Result<protocol::Released> release();

 private:
  friend class Client;
  Lease(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::LeaseState> state);
  // Releases by whichever way the calling thread allows, ignoring the result.
  void discard();

  std::shared_ptr<detail::Core> core_;  // outlives state_ (declared first)
  std::shared_ptr<detail::LeaseState> state_;
  bool released_ = false;
};

}  // namespace tenure::client
