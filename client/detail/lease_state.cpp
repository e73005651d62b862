#include "client/detail/lease_state.hpp"

#include <thread>

namespace tenure::client::detail {

using protocol::client_errc;
using protocol::Failure;
using protocol::Op;

LeaseState::LeaseState(Core& core, std::string key, LeaseOptions options, std::string owner)
    : core_(core),
      key_(std::move(key)),
      owner_(std::move(owner)),
      options_(std::move(options)),
      ttl_ms_(options_.ttl ? std::optional<std::int64_t>(options_.ttl->count()) : std::nullopt),
      timer_(core.io()),
      deadline_timer_(core.io()) {}

protocol::Request LeaseState::acquire_request(std::optional<milliseconds> wait) const {
  protocol::Request r{.op = Op::acquire, .key = key_, .owner = owner_};
  r.ttl_ms = ttl_ms_;
  if (wait) r.wait_ms = wait->count();
  r.release_on_disconnect = options_.release_on_disconnect;
  if (options_.lock_delay) r.lock_delay_ms = options_.lock_delay->count();
  return r;
}

void LeaseState::attach(const protocol::Acquired& acquired, Clock::time_point sent) {
  // On the io thread, before the next line is read: no `lost` notice can slip past.
  core_.add_lease(key_, acquired.token, weak_from_this());
  attached_ = core_.generation();
  ttl_ms_ = acquired.ttl_ms;
  granted_ttl_ms_ = ttl_ms_.value_or(-1);
  set_deadline(ttl_ms_ ? sent + milliseconds(*ttl_ms_) : Clock::time_point::max());
}

void LeaseState::set_deadline(Clock::time_point deadline) {
  deadline_ = deadline;
  if (deadline == Clock::time_point::max()) {
    deadline_timer_.cancel();
    return;
  }
  deadline_timer_.expires_at(deadline);
  deadline_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->stopped_ || self->lost() || Clock::now() < self->deadline_) return;
    self->mark_lost("unreachable: no renewal got through before the lease's deadline");
  });
}

void LeaseState::acquire(Done<protocol::Acquired> done) {
  auto sent = Clock::now();
  milliseconds extra = options_.wait.value_or(milliseconds(0));
  core_.call(acquire_request(options_.wait), extra,
             [self = shared_from_this(), sent, done = std::move(done)](Result<Message> reply) {
               if (!reply) return done(reply.error());
               auto acquired = protocol::read_acquired(*reply);
               if (acquired) {
                 self->token_ = acquired->token;
                 self->attach(*acquired, sent);
                 if (self->ttl_ms_) self->arm(milliseconds(*self->ttl_ms_ / 3));
               }
               done(std::move(acquired));
             });
}

void LeaseState::arm(milliseconds delay) {
  if (stopped_ || lost()) return;
  timer_.expires_after(delay);
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->tick();
  });
}

void LeaseState::tick() {
  if (stopped_ || lost()) return;
  renew([self = shared_from_this()](Result<protocol::Renewed> r) {
    if (self->stopped_ || self->lost()) return;
    if (r) {
      self->backoff_ = milliseconds(50);  // renew() armed the next one
      return;
    }
    // not_holder and held already marked the loss; anything else is retried until the deadline.
    auto left = std::chrono::duration_cast<milliseconds>(self->deadline_ - Clock::now());
    if (left <= milliseconds(0)) return self->mark_lost("unreachable: " + r.error().message);
    self->arm(std::min(self->backoff_, left));
    self->backoff_ = std::min(self->backoff_ * 2, milliseconds(1000));
  });
}

void LeaseState::renew(Done<protocol::Renewed> done) {
  if (lost()) {
    return done(
        Failure(client_errc::not_holder, "the lease of " + key_ + " was lost: " + lost_reason()));
  }
  protocol::Request r{.op = Op::renew, .key = key_, .owner = owner_};
  r.ttl_ms = ttl_ms_;
  r.token = token();
  auto sent = Clock::now();
  core_.call(r, {}, [self = shared_from_this(), sent, done = std::move(done)](Result<Message> m) {
    if (!m) return done(m.error());
    auto renewed = protocol::read_renewed(*m);
    if (!renewed) {
      if (renewed.error().is(client_errc::not_holder)) self->mark_lost(renewed.error().reason);
      return done(std::move(renewed));
    }
    self->set_deadline(renewed->ttl_ms ? sent + milliseconds(*renewed->ttl_ms)
                                       : Clock::time_point::max());
    // Any renewal, the caller's too, sets when the next one is due: a retry armed while the
    // server was unreachable must not renew again now (it would learn of a later loss by a
    // renewal's bare `not_holder` before the connection's `lost` notice says why).
    if (self->ttl_ms_) self->arm(milliseconds(*self->ttl_ms_ / 3));
    if (self->attached_ != self->core_.generation()) {
      return self->reattach(std::move(done), std::move(renewed.value()));
    }
    done(std::move(renewed));
  });
}

void LeaseState::reattach(Done<protocol::Renewed> done, protocol::Renewed renewed) {
  // An idempotent acquire makes the new connection the one told of loss. If it started a new
  // tenure, ours ended in between: give that one back and report the loss.
  auto sent = Clock::now();
  core_.call(acquire_request(std::nullopt), {},
             [self = shared_from_this(), sent, done = std::move(done),
              renewed = std::move(renewed)](Result<Message> m) mutable {
               if (!m) return done(m.error());
               auto acquired = protocol::read_acquired(*m);
               if (acquired && acquired->token == self->token()) {
                 self->attach(*acquired, sent);
                 return done(std::move(renewed));
               }
               if (acquired) {
                 protocol::Request r{.op = Op::release, .key = self->key_, .owner = self->owner_};
                 r.token = acquired->token;
                 self->core_.call(r, {}, [](Result<Message>) {});
               } else if (!acquired.error().is(client_errc::held)) {
                 return done(acquired.error());
               }
               self->mark_lost("expired");
               done(Failure(client_errc::not_holder, "the lease of " + self->key_ + " expired"));
             });
}

void LeaseState::release(Done<protocol::Released> done) {
  stopped_ = true;
  timer_.cancel();
  deadline_timer_.cancel();
  // A lost tenure has ended, or could not be renewed in time: nothing of ours to release.
  if (token() == 0 || lost()) return done(protocol::Released{key_, std::nullopt, std::nullopt});
  core_.drop_lease(key_, token());
  protocol::Request r{.op = Op::release, .key = key_, .owner = owner_};
  r.token = token();
  core_.call(r, {}, [self = shared_from_this(), done = std::move(done)](Result<Message> m) {
    if (!m) {
      if (self->lost()) return done(protocol::Released{self->key_, std::nullopt, std::nullopt});
      return done(m.error());
    }
    auto released = protocol::read_released(*m);
    if (!released && (released.error().is(client_errc::not_holder) || self->lost())) {
      // Not ours any more: nothing of ours to release.
      return done(protocol::Released{self->key_, std::nullopt, std::nullopt});
    }
    done(std::move(released));
  });
}

void LeaseState::on_message(const Message& message) {
  if (auto lost = protocol::read_lost(message)) mark_lost(lost->reason);
}

void LeaseState::on_disconnect(std::uint64_t) {
  if (stopped_ || lost()) return;
  if (options_.release_on_disconnect) return mark_lost("disconnected");
  arm(milliseconds(0));  // renew (and re-attach) through a new connection now
}

void LeaseState::mark_lost(std::string reason) {
  if (stopped_) return;
  {
    std::lock_guard lock(mutex_);
    if (lost_) return;
    lost_reason_ = reason;
    lost_ = true;
  }
  lost_cv_.notify_all();
  timer_.cancel();
  deadline_timer_.cancel();
  core_.drop_lease(key_, token());
  // On a thread of its own: the callback may block, or call the client.
  if (options_.on_lost) std::thread(options_.on_lost, std::move(reason)).detach();
}

std::string LeaseState::lost_reason() const {
  std::lock_guard lock(mutex_);
  return lost_reason_;
}

bool LeaseState::wait_lost(milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return lost_cv_.wait_for(lock, timeout, [this] { return lost_.load(); });
}

}  // namespace tenure::client::detail
