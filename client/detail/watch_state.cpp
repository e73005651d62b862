#include "client/detail/watch_state.hpp"

namespace tenure::client::detail {

using protocol::client_errc;
using protocol::Failure;

WatchState::WatchState(Core& core, WatchOptions options)
    : core_(core),
      options_(std::move(options)),
      retry_(core.io()),
      next_revision_(options_.from_revision) {}

void WatchState::start(std::function<void(Result<protocol::Watching>)> done) {
  started_ = std::move(done);
  subscribe();
}

void WatchState::subscribe() {
  protocol::Request r{.op = protocol::Op::watch, .key = options_.key, .prefix = options_.prefix};
  {
    // The first subscription's from the revision asked for (empty: live only), a resume's from
    // the revision after the last event.
    std::lock_guard lock(mutex_);
    r.from_revision = next_revision_;
  }
  core_.call(r, {}, [self = shared_from_this()](Result<Message> m) {
    if (!m) return self->on_subscribed(m.error());
    self->on_subscribed(protocol::read_watching(*m));
  });
}

void WatchState::on_subscribed(Result<protocol::Watching> watching) {
  auto report = [this](Result<protocol::Watching> r) {
    if (!started_) {
      if (r) return;
      // next()'s own `timeout` means the watch goes on: a resume left unanswered ends it.
      if (!r.error().is(client_errc::timeout)) return push(r.error());
      return push(Failure(client_errc::disconnected, r.error().message));
    }
    auto done = std::move(started_);
    started_ = nullptr;
    done(std::move(r));
  };
  if (closed_) {
    if (started_) report(Failure(client_errc::closed, "the watch is closed"));
    return;
  }
  if (watching) {
    // On the io thread, before the next line: the watch's events find it.
    core_.add_watch(watching->watch_id, weak_from_this());
    watch_id_ = watching->watch_id;
    if (!replay_failing_since_) backoff_ = milliseconds(50);  // else it grows from error to error
    resuming_since_.reset();
    {
      std::lock_guard lock(mutex_);
      if (!next_revision_) next_revision_ = watching->revision + 1;
    }
    return report(std::move(watching));
  }
  const auto& e = watching.error();
  // Refused for too many watches, the first subscription has its answer; a resume waits it out.
  bool transient = e.is(client_errc::cannot_connect) || e.is(client_errc::disconnected) ||
                   e.is(client_errc::timeout) || e.is(client_errc::unavailable) ||
                   (!started_ && e.is(client_errc::too_many_requests));
  // The first subscription's budget starts at its failure, as a resume's at the connection's
  // loss; the caller waits on it, so it is never unlimited.
  if (!resuming_since_) resuming_since_ = std::chrono::steady_clock::now();
  auto limit = started_ ? options_.resume_for.value_or(core_.timeout()) : options_.resume_for;
  bool given_up = limit && std::chrono::steady_clock::now() - *resuming_since_ >= *limit;
  // e.g. the server refused the watch, or nothing answered in time: say so.
  if (!transient || given_up) return report(e);
  retry_.expires_after(backoff_);
  backoff_ = std::min(backoff_ * 2, milliseconds(2000));
  retry_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->closed_) self->subscribe();
  });
}

void WatchState::resume() {
  if (closed_) return;
  if (!resuming_since_) resuming_since_ = std::chrono::steady_clock::now();
  subscribe();
}

void WatchState::on_message(const Message& message) {
  if (closed_) return;
  auto f = message.fields();
  if (protocol::uint_field(f, "watch_id") != watch_id_) return;
  if (message.event() == "lagged") {
    {
      std::lock_guard lock(mutex_);
      next_revision_ = protocol::uint_field(f, "resume_from").value_or(next_revision_.value_or(0));
    }
    return resume();
  }
  if (message.event() == "compacted") {
    auto oldest = protocol::uint_field(f, "oldest_revision").value_or(0);
    Failure failure(client_errc::compacted,
                    "cannot resume the watch from revision " + std::to_string(next_revision()) +
                        ": the ledger keeps events from revision " + std::to_string(oldest));
    failure.line = message.line();
    return push(std::move(failure));
  }
  if (message.event() == "error") return on_replay_failed(message);
  auto event = protocol::read_event(message);
  if (!event) return;
  {
    std::lock_guard lock(mutex_);
    if (next_revision_ && event->revision < *next_revision_) return;  // never twice
    next_revision_ = event->revision + 1;
  }
  replay_failing_since_.reset();
  push(std::move(*event));
}

void WatchState::on_replay_failed(const Message& message) {
  // The server cancelled the watch, having sent every event before resume_from: it is resumed
  // from there after a pause, as a failed resubscription is, and ends with the server's words
  // once resume_for has passed without an event.
  auto f = message.fields();
  {
    std::lock_guard lock(mutex_);
    next_revision_ = protocol::uint_field(f, "resume_from").value_or(next_revision_.value_or(0));
  }
  core_.drop_watch(watch_id_);
  watch_id_ = 0;
  auto now = std::chrono::steady_clock::now();
  if (!replay_failing_since_) replay_failing_since_ = now;
  if (options_.resume_for && now - *replay_failing_since_ >= *options_.resume_for) {
    auto text = protocol::string_field(f, "message");
    Failure failure(client_errc::unavailable, "the server cannot replay the watch from revision " +
                                                  std::to_string(next_revision()) + ": " +
                                                  std::string(text.value_or("")));
    failure.line = message.line();
    return push(std::move(failure));
  }
  retry_.expires_after(backoff_);
  backoff_ = std::min(backoff_ * 2, milliseconds(2000));
  retry_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->closed_) self->resume();
  });
}

void WatchState::on_disconnect(std::uint64_t) {
  watch_id_ = 0;
  resume();
}

void WatchState::close() {
  if (closed_) return;
  closed_ = true;
  retry_.cancel();
  if (watch_id_ != 0) {
    core_.drop_watch(watch_id_);
    protocol::Request r{.op = protocol::Op::unwatch};
    r.watch_id = watch_id_;
    core_.call(r, {}, [](Result<Message>) {});
  }
  push(Failure(client_errc::closed, "the watch is closed"));
}

void WatchState::push(Result<protocol::Event> item) {
  {
    std::lock_guard lock(mutex_);
    items_.push_back(std::move(item));
  }
  ready_.notify_one();
}

Result<protocol::Event> WatchState::next(milliseconds timeout) {
  std::unique_lock lock(mutex_);
  auto has_item = [this] { return !items_.empty(); };
  if (timeout == milliseconds::max()) {
    ready_.wait(lock, has_item);
  } else if (!ready_.wait_for(lock, timeout, has_item)) {
    return Failure(client_errc::timeout,
                   "no watch event within " + std::to_string(timeout.count()) + " ms");
  }
  // A failure ends the watch: it stays at the front for every later call.
  if (!items_.front()) return items_.front().error();
  auto item = std::move(items_.front());
  items_.pop_front();
  return item;
}

std::uint64_t WatchState::next_revision() const {
  std::lock_guard lock(mutex_);
  return next_revision_.value_or(0);
}

}  // namespace tenure::client::detail
