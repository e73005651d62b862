#include "transports/unix_session.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

#include "transports/reply_format.hpp"
#include "transports/task_failure.hpp"

namespace tenure {

namespace asio = boost::asio;
using asio::as_tuple;
// Completions resume the connection's coroutines on its strand (UnixSession::Task).
constexpr asio::use_awaitable_t<Conversation::Strand> use_awaitable;

namespace {

// Most requests are small: start with this much input buffer and return to it after a big one.
constexpr std::size_t kInitialInput = 4096;
// Output buffers grown past this by a burst are cut back to it rather than kept per connection.
constexpr std::size_t kKeptOutputCapacity = 64 * 1024;
// How long a graceful close waits for the client to stop sending and hang up.
constexpr auto kLingerTimeout = std::chrono::seconds(1);

// The completion token of the connection's awaited operations: errors as values, and the
// operation's memory from the connection's, reused by the next one.
auto reusing(HandlerAllocator<void> memory) {
  return asio::bind_allocator(memory, as_tuple(use_awaitable));
}

}  // namespace

UnixSession::UnixSession(Socket socket, Strand strand, ServerContext& context, Peer peer)
    : Conversation(context, strand, Transport::unix_socket, Credentials{peer.uid, peer.admin, {}},
                   peer.pid),
      socket_(std::move(socket)),
      wake_(strand),
      write_deadline_(strand),
      wake_writer_(strand),
      peer_(peer),
      input_(std::min(kInitialInput, context.limits.max_frame + 1), '\0') {}

UnixSession::~UnixSession() { close(); }

void UnixSession::start() {
  open();
  // For the writes tried at once (write_loop); without it they are only ever asynchronous.
  boost::system::error_code ignored;
  socket_.non_blocking(true, ignored);
  spdlog::debug("connection {} opened by uid {}", conn(), peer_.uid);
  asio::co_spawn(
      strand_, [self = self()] { return self->read_loop(); },
      LogTaskFailure("socket connection read loop"));
  asio::co_spawn(
      strand_, [self = self()] { return self->write_loop(); },
      LogTaskFailure("socket connection write loop"));
}

void UnixSession::drain() {
  asio::post(strand_, [self = self()] {
    if (self->state_ != State::open) return;
    // Requests already read still get their replies; the engine answers waiters as it stops.
    self->state_ = State::draining;
    self->stop_read_.emit(asio::cancellation_type::all);
    self->wake_.cancel();
    self->end_watches();
    self->settle();
  });
}

void UnixSession::abort() {
  asio::post(strand_, [self = self()] { self->close(); });
}

UnixSession::Task<void> UnixSession::read_loop() {
  while (state_ == State::open) {
    serve_lines();
    if (state_ != State::open) co_return;
    if (read_budget_spent()) {
      co_await wait_for_room();
      continue;
    }
    if (!make_room_for_input()) {
      send_error({errc::frame_too_large, "a line is longer than " +
                                             std::to_string(context_.limits.max_frame) +
                                             " bytes; closing"});
      stop_reading(State::flushing);
      co_return;
    }
    auto [error, n] = co_await socket_.async_read_some(
        asio::buffer(input_.data() + end_, input_.size() - end_),
        asio::bind_cancellation_slot(stop_read_.slot(), reusing(handler_allocator())));
    if (error) {
      if (state_ != State::open) co_return;
      // A last request without its newline is still a request.
      if (error == asio::error::eof && begin_ < end_) {
        handle_line(std::string_view(input_.data() + begin_, end_ - begin_));
      }
      stop_reading(State::draining);
      co_return;
    }
    end_ += n;
    read_at_ = context_.engine.clock().now();
  }
}

UnixSession::Task<void> UnixSession::wait_for_room() {
  waiting_for_room_ = true;
  wake_.expires_at(asio::steady_timer::time_point::max());
  co_await wake_.async_wait(reusing(handler_allocator()));
  waiting_for_room_ = false;
}

std::optional<std::string_view> UnixSession::next_line() {
  const char* base = input_.data();
  const void* newline = std::memchr(base + scan_, '\n', end_ - scan_);
  if (newline == nullptr) {
    scan_ = end_;
    return std::nullopt;
  }
  std::size_t at = static_cast<const char*>(newline) - base;
  std::string_view line(base + begin_, at - begin_);
  begin_ = scan_ = at + 1;
  return line;
}

// Moves the unconsumed bytes to the front and grows the buffer up to one frame and its newline.
// False when a whole frame is buffered and still has no newline: the line is too long.
bool UnixSession::make_room_for_input() {
  std::size_t kept = end_ - begin_;
  if (kept == 0 && input_.size() > kInitialInput) {
    input_.resize(kInitialInput);
    input_.shrink_to_fit();
  } else if (begin_ > 0) {
    std::memmove(input_.data(), input_.data() + begin_, kept);
  }
  scan_ -= begin_;
  end_ = kept;
  begin_ = 0;
  if (end_ < input_.size()) return true;
  std::size_t limit = context_.limits.max_frame + 1;
  if (input_.size() >= limit) return false;
  input_.resize(std::min(limit, input_.size() * 2));
  return true;
}

// The requests of the lines read so far go to the engine as one burst: one message per shard
// they touch, not one per request.
void UnixSession::serve_lines() {
  Engine::Burst burst(context_.engine);
  while (state_ == State::open && !read_budget_spent()) {
    auto line = next_line();
    if (!line) return;
    handle_line(*line);
  }
}

void UnixSession::handle_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank lines
  handle_request(line, read_at_);
}

void UnixSession::queue(MessageFormat format, const std::shared_ptr<Subscription>& event_of) {
  format(pending_);
  pending_.push_back('\n');
  if (event_of) pending_events_.add(event_of);
  start_writing();
}

void UnixSession::start_writing() {
  // A turn's replies are written by the settle() after them.
  if (!writer_idle_ || pending_.empty() || write_deferred_ || answering()) return;
  // Deferred, not a wake of the write loop: a cancelled timer's completion goes to Asio's shared
  // queue, which wakes another io thread to write (two thread wake-ups per reply at one
  // connection). A deferred handler runs on this thread once the current one ends, by when
  // every message of this handler is queued.
  write_deferred_ = true;
  asio::defer(strand_, asio::bind_allocator(handler_allocator(), [self = self()] {
                self->write_deferred_ = false;
                self->settle();  // which writes
              }));
}

void UnixSession::write_at_once() {
  if (!writer_idle_ || pending_.empty() || ended()) return;
  boost::system::error_code error;
  std::size_t written = 0;
  if (socket_.non_blocking()) {
    std::swap(pending_, outgoing_);
    std::swap(pending_events_, outgoing_events_);
    written = socket_.write_some(asio::buffer(outgoing_), error);
    if (!error && written == outgoing_.size()) return wrote_all();
    // The socket's buffer is full (or the write failed): the rest is the write loop's, which
    // waits for room with a timeout (or closes).
    if (!error) outgoing_.erase(0, written);
  }
  writer_idle_ = false;
  wake_writer_.cancel();
}

void UnixSession::wrote_all() {
  outgoing_.clear();
  if (outgoing_.capacity() > kKeptOutputCapacity) {
    // Back to the kept size, not to nothing: regrowing from a few bytes on every write of a
    // burst showed in expiry-storm profiles as reallocation, copying and malloc_consolidate.
    std::string().swap(outgoing_);
    outgoing_.reserve(kKeptOutputCapacity);
  }
  outgoing_events_.written();
}

UnixSession::Task<void> UnixSession::write_loop() {
  while (!ended()) {
    if (pending_.empty() && outgoing_.empty()) {
      writer_idle_ = true;
      wake_writer_.expires_at(asio::steady_timer::time_point::max());
      co_await wake_writer_.async_wait(reusing(handler_allocator()));
      writer_idle_ = false;
      continue;
    }
    writing_ = true;
    // What write_at_once could not write goes first.
    if (outgoing_.empty()) {
      std::swap(pending_, outgoing_);
      std::swap(pending_events_, outgoing_events_);
    }
    std::size_t written = 0;
    boost::system::error_code error;
    // Most writes fit the socket's buffer at once: then they need no asynchronous write, no
    // completion to come back for and no write timeout, which only a write that waits needs.
    if (socket_.non_blocking()) {
      written = socket_.write_some(asio::buffer(outgoing_), error);
      if (error == asio::error::would_block) error = {};
    }
    bool timed = false;
    while (!error && written < outgoing_.size()) {
      arm_write_timeout();
      timed = true;
      std::size_t n = 0;
      std::tie(error, n) = co_await socket_.async_write_some(
          asio::buffer(outgoing_.data() + written, outgoing_.size() - written),
          reusing(handler_allocator()));
      written += n;
    }
    if (timed) write_deadline_.cancel();
    writing_ = false;
    if (unread_) co_return co_await close_unread(written);
    wrote_all();
    if (error) co_return close();
    if (pending_.empty()) settle();
  }
}

void UnixSession::arm_write_timeout() {
  write_deadline_.expires_after(context_.limits.write_timeout);
  write_deadline_.async_wait(
      asio::bind_allocator(handler_allocator(), [self = self()](boost::system::error_code error) {
        if (error || self->ended() || self->unread_) return;
        self->unread_ = true;
        self->socket_.cancel();  // the write in flight ends, having written nothing more
      }));
}

void UnixSession::stop_reading(State next) {
  state_ = next;
  disconnect();
  settle();
}

void UnixSession::settle() {
  if (ended()) return;
  if (writer_idle_ && !pending_.empty() && !write_deferred_) write_at_once();
  if (waiting_for_room_ && (state_ != State::open || !read_budget_spent())) wake_.cancel();
  bool written = unwritten_bytes() == 0 && !writing_;
  bool done = state_ == State::flushing || (state_ == State::draining && inflight() == 0);
  if (!written || !done) return;
  state_ = State::closing;
  wake_writer_.cancel();
  asio::co_spawn(
      strand_, [self = self()] { return self->close_gracefully(); },
      LogTaskFailure("socket connection graceful close"));
}

// Closing a socket with unread input resets the connection, and the reset can destroy replies
// the client has not read yet. So: stop sending (the client reads our replies, then the end),
// discard what it still sends until it hangs up or the deadline passes, and only then close.
UnixSession::Task<void> UnixSession::close_gracefully() {
  boost::system::error_code ignored;
  socket_.shutdown(Socket::shutdown_send, ignored);
  wake_.expires_after(kLingerTimeout);
  wake_.async_wait([self = self()](boost::system::error_code error) {
    if (!error) self->close();
  });
  for (;;) {
    auto [error, n] =
        co_await socket_.async_read_some(asio::buffer(input_), as_tuple(use_awaitable));
    if (error) break;
  }
  close();
}

// The client has not taken a byte for the write timeout, so it is not reading. Its line being
// written is finished, what follows is dropped for a `closing` notice that says how many messages
// it will not get, and the connection closes once that is written, or after another write
// timeout. A client that reads again in time learns why it was cut off.
UnixSession::Task<void> UnixSession::close_unread(std::size_t written) {
  std::string_view rest(outgoing_);
  rest.remove_prefix(written);
  std::size_t line_end = rest.find('\n');
  std::string last(rest.substr(0, line_end == std::string_view::npos ? 0 : line_end + 1));
  rest.remove_prefix(last.size());
  std::size_t undelivered =
      static_cast<std::size_t>(std::count(rest.begin(), rest.end(), '\n') +
                               std::count(pending_.begin(), pending_.end(), '\n'));
  spdlog::warn(
      "connection {} (uid {}): closing, no output taken for {} ms; {} messages not delivered",
      conn(), peer_.uid, context_.limits.write_timeout.count(), undelivered);
  state_ = State::closing;
  stop_read_.emit(asio::cancellation_type::all);  // close_gracefully does the reading from now
  disconnect();
  format_closing(last, undelivered, context_.limits.write_timeout.count());
  last.push_back('\n');
  pending_.clear();
  outgoing_.clear();
  outgoing_events_.written();
  pending_events_.written();
  // As long again for the notice: a client that reads again by then learns why.
  write_deadline_.expires_after(context_.limits.write_timeout);
  write_deadline_.async_wait([self = self()](boost::system::error_code error) {
    if (!error) self->close();
  });
  auto [error, n] =
      co_await asio::async_write(socket_, asio::buffer(last), as_tuple(use_awaitable));
  if (error) co_return close();
  write_deadline_.cancel();
  co_await close_gracefully();
}

void UnixSession::close() {
  if (state_ == State::closed) return;
  state_ = State::closed;
  boost::system::error_code ignored;
  socket_.close(ignored);
  wake_.cancel();
  write_deadline_.cancel();
  wake_writer_.cancel();
  disconnect();
  context_.registry.remove(this);
  spdlog::debug("connection {} closed", conn());
}

}  // namespace tenure
