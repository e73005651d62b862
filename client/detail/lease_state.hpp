#pragma once
// The io-thread side of a Lease: acquire, the renew timer, re-attaching after a reconnect, loss.
#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <mutex>

#include "client/detail/core.hpp"
#include "client/options.hpp"
#include "protocol/replies.hpp"

namespace tenure::client::detail {

class LeaseState final : public Listener, public std::enable_shared_from_this<LeaseState> {
 public:
  using Clock = std::chrono::steady_clock;
  template <typename T>
  using Done = std::function<void(Result<T>)>;

  LeaseState(Core& core, std::string key, LeaseOptions options, std::string owner);

  // io thread.
  void acquire(Done<protocol::Acquired> done);
  void renew(Done<protocol::Renewed> done);
  void release(Done<protocol::Released> done);
  void on_message(const Message& message) override;
  void on_disconnect(std::uint64_t generation) override;

  // Any thread.
  const std::string& key() const { return key_; }
  const std::string& owner() const { return owner_; }
  std::uint64_t token() const { return token_.load(); }
  std::optional<milliseconds> granted_ttl() const {
    std::int64_t ttl = granted_ttl_ms_.load();
    return ttl < 0 ? std::nullopt : std::optional<milliseconds>(ttl);
  }
  bool lost() const { return lost_.load(); }
  std::string lost_reason() const;
  bool wait_lost(milliseconds timeout) const;

 private:
  protocol::Request acquire_request(std::optional<milliseconds> wait) const;
  void attach(const protocol::Acquired& acquired, Clock::time_point sent);
  void reattach(Done<protocol::Renewed> done, protocol::Renewed renewed);
  void arm(milliseconds delay);
  void tick();
  // The lease lasts at least until `deadline` (max: open-ended); if no renewal has moved it on by
  // then, the lease is lost, however long a renewal in flight may still wait for its reply.
  void set_deadline(Clock::time_point deadline);
  void mark_lost(std::string reason);

  Core& core_;
  const std::string key_;
  const std::string owner_;
  LeaseOptions options_;
  std::optional<std::int64_t> ttl_ms_;  // the effective ttl; empty: open-ended
  std::atomic<std::uint64_t> token_{0};
  std::atomic<std::int64_t> granted_ttl_ms_{-1};  // ttl_ms_ for other threads; -1: open-ended
  Clock::time_point deadline_{};                  // the lease lasts at least until then
  std::uint64_t attached_ = 0;                    // the connection generation told of loss
  asio::steady_timer timer_;
  asio::steady_timer deadline_timer_;
  milliseconds backoff_{50};
  bool stopped_ = false;

  std::atomic<bool> lost_{false};
  mutable std::mutex mutex_;
  mutable std::condition_variable lost_cv_;
  std::string lost_reason_;
};

}  // namespace tenure::client::detail
