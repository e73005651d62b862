#include "client/detail/core.hpp"

#include <boost/asio/post.hpp>
#include <cerrno>
#include <future>
#include <vector>

#include "protocol/replies.hpp"

namespace tenure::client::detail {

using protocol::client_errc;
using protocol::Failure;

Core::Core(std::vector<Endpoint> endpoints, milliseconds timeout)
    : endpoints_(std::move(endpoints)),
      timeout_(timeout),
      work_(io_.get_executor()),
      thread_([this] { io_.run(); }) {}

Core::~Core() {
  asio::post(io_, [this] {
    disconnect("the client is closed");
    work_.reset();
  });
  thread_.join();
}

std::optional<Failure> Core::ensure_connected() {
  if (stream_) return std::nullopt;
  std::string problems;
  for (std::size_t tried = 0; !stream_ && tried < endpoints_.size(); ++tried) {
    auto stream = endpoints_[current_].make_stream(io_);
    if (auto problem = stream->connect()) {
      problems += (problems.empty() ? "" : "; ") + *problem;
      move_on();
    } else {
      stream_ = std::move(stream);
    }
  }
  if (!stream_) return Failure(client_errc::cannot_connect, problems);
  ++generation_;
  close_reason_.clear();
  inbox_.clear();
  read_more();
  return std::nullopt;
}

void Core::call(const protocol::Request& request, milliseconds extra, ReplyHandler handler) {
  if (auto bad = protocol::undefined_field(request)) {
    handler(Failure(client_errc::invalid_argument, std::string(protocol::to_string(request.op)) +
                                                       " takes no field " +
                                                       std::string(protocol::to_string(*bad))));
    return;
  }
  if (auto failure = ensure_connected()) {
    handler(std::move(*failure));
    return;
  }
  std::uint64_t id = next_id_++;
  auto timer = std::make_unique<asio::steady_timer>(io_, timeout_ + extra);
  timer->async_wait([this, id, total = timeout_ + extra](boost::system::error_code ec) {
    if (ec) return;
    std::string reason = "no reply from tenured at " + address() + " within " +
                         std::to_string(total.count()) + " ms";
    finish(id, Failure(client_errc::timeout, reason));
    // A daemon that stalls is as good as gone when another can answer.
    if (endpoints_.size() > 1) disconnect(reason);
  });
  pending_.emplace(id, Pending{std::move(handler), std::move(timer)});
  send(protocol::format(id, request));
}

Failure Core::blocking_on_io_thread() {
  return Failure(client_errc::invalid_argument,
                 "a blocking call on the client's own io thread would never finish; use the "
                 "async calls in completion handlers");
}

Result<Message> Core::call_blocking(const protocol::Request& request, milliseconds extra) {
  if (on_io_thread()) return blocking_on_io_thread();
  std::promise<Result<Message>> promise;
  auto future = promise.get_future();
  asio::post(io_, [&] {
    call(request, extra, [&promise](Result<Message> r) { promise.set_value(std::move(r)); });
  });
  return future.get();  // the call's own timer bounds the wait
}

void Core::finish(std::uint64_t id, Result<Message> result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  ReplyHandler handler = std::move(it->second.handler);
  it->second.timer->cancel();
  pending_.erase(it);
  handler(std::move(result));
}

void Core::send(std::string line) {
  outbox_.push_back(std::move(line));
  if (!writing_) write_next();
}

void Core::write_next() {
  if (outbox_.empty() || !stream_) {
    writing_ = false;
    return;
  }
  writing_ = true;
  std::uint64_t generation = generation_;
  stream_->async_write(outbox_.front(), [this, generation](std::error_code ec) {
    if (generation != generation_) return;  // a connection since closed
    outbox_.pop_front();
    if (ec)
      return disconnect("lost the connection to tenured at " + address() + ": " + ec.message());
    write_next();
  });
}

void Core::read_more() {
  std::uint64_t generation = generation_;
  stream_->async_read([this, generation](std::error_code ec, std::string_view data) {
    if (generation != generation_ || !stream_) return;
    if (ec) {
      return disconnect(close_reason_.empty() ? "lost the connection to tenured at " + address()
                                              : close_reason_);
    }
    inbox_.append(data);
    std::size_t start = 0;
    for (std::size_t end; (end = inbox_.find('\n', start)) != std::string::npos; start = end + 1) {
      if (end > start) on_line(inbox_.substr(start, end - start));
      if (generation != generation_ || !stream_) return;
    }
    inbox_.erase(0, start);
    read_more();
  });
}

void Core::on_line(std::string line) {
  auto message = Message::parse(std::move(line));
  if (!message) return;
  if (!message->event().empty()) {
    std::weak_ptr<Listener> target;
    auto f = message->fields();
    if (message->event() == "lost") {
      auto key = protocol::string_field(f, "key");
      auto token = protocol::uint_field(f, "token");
      auto it = leases_.find({std::string(key.value_or("")), token.value_or(0)});
      if (it == leases_.end()) return;
      target = it->second;
      leases_.erase(it);
    } else {
      auto it = watches_.find(protocol::uint_field(f, "watch_id").value_or(0));
      if (it == watches_.end()) return;
      target = it->second;
      if (message->event() == "lagged" || message->event() == "compacted") watches_.erase(it);
    }
    if (auto listener = target.lock()) listener->on_message(*message);
    return;
  }
  if (auto id = message->id()) {
    finish(*id, std::move(*message));
  } else if (message->status() == "error") {
    // Every request has an id: an error without one is about the connection itself.
    if (auto failure = protocol::reply_failure(*message)) close_reason_ = failure->message;
  }
}

void Core::move_on() { current_ = (current_ + 1) % endpoints_.size(); }

void Core::disconnect(std::string reason) {
  if (!stream_) return;
  stream_->close();
  stream_.reset();
  move_on();
  outbox_.clear();
  writing_ = false;
  std::uint64_t generation = generation_;
  ++generation_;  // handlers of the closed connection see a stale generation
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    p.timer->cancel();
    p.handler(Failure(client_errc::disconnected, reason));
  }
  std::vector<std::shared_ptr<Listener>> listeners;
  for (auto& [key, weak] : leases_) {
    if (auto l = weak.lock()) listeners.push_back(std::move(l));
  }
  for (auto& [id, weak] : watches_) {
    if (auto l = weak.lock()) listeners.push_back(std::move(l));
  }
  leases_.clear();
  watches_.clear();
  for (auto& l : listeners) l->on_disconnect(generation);
}

void Core::add_lease(const std::string& key, std::uint64_t token, std::weak_ptr<Listener> lease) {
  leases_[{key, token}] = std::move(lease);
}

void Core::drop_lease(const std::string& key, std::uint64_t token) { leases_.erase({key, token}); }

void Core::add_watch(std::uint64_t watch_id, std::weak_ptr<Listener> watch) {
  watches_[watch_id] = std::move(watch);
}

void Core::drop_watch(std::uint64_t watch_id) { watches_.erase(watch_id); }

}  // namespace tenure::client::detail
