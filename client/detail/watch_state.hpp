#pragma once
// The io-thread side of a Watch: subscribing, resuming from the next revision after a reconnect
// or `lagged`, and the queue of events its reader takes from.
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "client/detail/core.hpp"
#include "client/options.hpp"
#include "protocol/replies.hpp"

namespace tenure::client::detail {

class WatchState final : public Listener, public std::enable_shared_from_this<WatchState> {
 public:
  WatchState(Core& core, WatchOptions options);

  // io thread. `done` hears how the first subscription went: a transient failure (no reply, the
  // connection lost, `unavailable`) is tried again, on the next endpoint with several, as a
  // resume is, within resume_for (empty: the core's timeout) of the failure.
  void start(std::function<void(Result<protocol::Watching>)> done);
  void close();
  void on_message(const Message& message) override;
  void on_disconnect(std::uint64_t generation) override;

  // Any thread.
  Result<protocol::Event> next(milliseconds timeout);
  std::uint64_t next_revision() const;

 private:
  void subscribe();
  void on_subscribed(Result<protocol::Watching> watching);
  void resume();
  // The server's `error` event: its replay could not read the event log from `resume_from`.
  void on_replay_failed(const Message& message);
  void push(Result<protocol::Event> item);

  Core& core_;
  WatchOptions options_;
  std::uint64_t watch_id_ = 0;
  std::function<void(Result<protocol::Watching>)> started_;  // set until the first subscription
  asio::steady_timer retry_;
  milliseconds backoff_{50};
  // Since when resuming has been needed (set while the watch is not subscribed).
  std::optional<std::chrono::steady_clock::time_point> resuming_since_;
  // Since when the server's replays have failed (`error` events) with no event between.
  std::optional<std::chrono::steady_clock::time_point> replay_failing_since_;
  bool closed_ = false;

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Result<protocol::Event>> items_;
  std::optional<std::uint64_t> next_revision_;  // empty until the first subscription: live only
};

}  // namespace tenure::client::detail
