#pragma once
// tenure::client::Watch: the events of a key or a prefix as a stream. It resumes by itself from
// the revision after the last event it received, across reconnects (with backoff) and `lagged`;
// a resume from a revision the ledger no longer keeps ends it with `compacted`.
#include <chrono>
#include <memory>

#include "protocol/replies.hpp"
#include "protocol/result.hpp"

namespace tenure::client {

namespace detail {
class Core;
class WatchState;
}  // namespace detail

class Watch {
 public:
  Watch(Watch&&) noexcept;
  Watch& operator=(Watch&&) noexcept;
  ~Watch();  // close()

  // The next event; failures: timeout (none within it; the watch goes on), compacted,
  // closed, or the server's refusal of the watch.
  protocol::Result<protocol::Event> next(
      std::chrono::milliseconds timeout = std::chrono::milliseconds::max());
  // Where a resume would start: the revision after the last event received.
  std::uint64_t next_revision() const;
  // The server's reply to the first subscription (resumes make others).
  const protocol::Watching& watching() const { return watching_; }
  // Unwatch; next() then fails with `closed`.
  void close();

 private:
  friend class Client;
  Watch(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::WatchState> state,
        protocol::Watching watching);

  std::shared_ptr<detail::Core> core_;
  std::shared_ptr<detail::WatchState> state_;
  protocol::Watching watching_;
};

}  // namespace tenure::client
