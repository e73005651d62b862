#include "transports/ws_session.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "transports/reply_format.hpp"
#include "transports/task_failure.hpp"

namespace tenure {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using asio::as_tuple;
using asio::use_awaitable;

namespace {

// The opening and the closing handshake must each finish within this.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
// A connection that sends nothing, not even a pong to our pings, for this long is closed.
constexpr auto kIdleTimeout = std::chrono::seconds(300);
// The rest of a message over the frame limit is read in pieces of this size and thrown away.
constexpr std::size_t kDiscardChunk = 64 * 1024;
constexpr std::uint64_t kLengthTopBit = std::uint64_t{1} << 63;

}  // namespace

WsSession::WsSession(beast::tcp_stream stream, Strand strand, ServerContext& context,
                     Credentials credentials)
    : Conversation(context, strand, Transport::websocket, std::move(credentials)),
      ws_(std::move(stream)),
      wake_(strand),
      write_deadline_(strand) {}

WsSession::~WsSession() { close(); }

void WsSession::start(Upgrade upgrade) {
  asio::co_spawn(
      strand_,
      [self = self(), upgrade = std::move(upgrade)]() mutable {
        return self->run(std::move(upgrade));
      },
      LogTaskFailure("WebSocket connection"));
}

void WsSession::drain() {
  asio::post(strand_, [self = self()] {
    if (self->state_ != State::open) return;
    if (!self->accepted_) return self->close();  // no close handshake before the opening one
    // Requests already read still get their replies; the close handshake follows them.
    self->state_ = State::draining;
    self->wake_.cancel();
    self->end_watches();
    self->settle();
  });
}

void WsSession::abort() {
  asio::post(strand_, [self = self()] { self->close(); });
}

asio::awaitable<void> WsSession::run(Upgrade upgrade) {
  // The HTTP session's timer no longer applies: WebSocket has its own timeouts.
  beast::get_lowest_layer(ws_).expires_never();
  websocket::stream_base::timeout timeouts{kHandshakeTimeout, kIdleTimeout, true};
  ws_.set_option(timeouts);
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& response) {
    response.set(beast::http::field::server, "tenured/" TENURE_VERSION);
  }));
  // No limit of Beast's: read_message enforces --max-frame without closing the connection.
  ws_.read_message_max(0);
  ws_.text(true);
  auto [error] = co_await ws_.async_accept(upgrade, as_tuple(use_awaitable));
  if (error) {
    spdlog::debug("WebSocket handshake failed: {}", error.message());
    close();
    co_return;
  }
  accepted_ = true;
  open();
  spdlog::debug("connection {} opened over WebSocket", conn());
  while (state_ == State::open) {
    if (read_budget_spent()) {
      co_await wait_for_room();
      continue;
    }
    Message message = co_await read_message();
    if (state_ != State::open) co_return;  // draining: what comes now is not served
    if (message.error) {
      // The client closed, went away or timed out: nothing more can be written either.
      close();
      co_return;
    }
    handle_message(message);
  }
}

// Reads the next message whole if it fits the frame limit. A longer one is read to its end and
// thrown away piece by piece, so that no size a client claims makes the server buffer it.
asio::awaitable<WsSession::Message> WsSession::read_message() {
  input_.clear();
  Message message;
  std::size_t limit = context_.limits.max_frame;
  do {
    std::size_t room = message.size <= limit ? limit + 1 - message.size : kDiscardChunk;
    auto [error, n] = co_await ws_.async_read_some(input_, room, as_tuple(use_awaitable));
    message.size += n;
    if (error) {
      message.error = error;
      co_return message;
    }
    // RFC 6455 5.2: a 64-bit frame length has its top bit clear. Beast does not check; a length
    // of 2^63 or more is no message anyone sends, and reading it to its end would never end.
    if (!ws_.is_message_done() && ws_.read_size_hint(1) >= kLengthTopBit - message.size) {
      spdlog::info("connection {} (WebSocket): a frame length has its top bit set; closing",
                   conn());
      message.error = websocket::error::bad_size;
      co_return message;
    }
    if (message.size > limit) input_.clear();
  } while (!ws_.is_message_done());
  co_return message;
}

void WsSession::handle_message(const Message& message) {
  if (message.size > context_.limits.max_frame) {
    send_error({errc::frame_too_large, "a message is longer than " +
                                           std::to_string(context_.limits.max_frame) +
                                           " bytes; it was dropped"});
  } else if (ws_.got_binary()) {
    send_error({errc::bad_request, "binary frames are not requests: send JSON in text frames"});
  } else {
    auto data = input_.cdata();
    handle_request(std::string_view(static_cast<const char*>(data.data()), data.size()),
                   context_.engine.clock().now());
  }
}

asio::awaitable<void> WsSession::wait_for_room() {
  waiting_for_room_ = true;
  wake_.expires_at(asio::steady_timer::time_point::max());
  co_await wake_.async_wait(as_tuple(use_awaitable));
  waiting_for_room_ = false;
}

void WsSession::queue(MessageFormat format, const std::shared_ptr<Subscription>& event_of) {
  Frame frame{std::string(), event_of};
  format(frame.text);
  unwritten_ += frame.text.size();
  frames_.push_back(std::move(frame));
  if (writing_) return;
  writing_ = true;
  asio::co_spawn(
      strand_, [self = self()] { return self->write_loop(); },
      LogTaskFailure("WebSocket connection write loop"));
}

// Beast writes one frame per call, so a burst of events (a watch's replay, a fan-out) would
// leave in one small segment each. While more frames wait, the socket is corked: the kernel
// fills whole segments, and uncorking when the queue runs dry sends the rest at once.
asio::awaitable<void> WsSession::write_loop() {
  bool corked = false;
  write_progress_ = std::chrono::steady_clock::now();
  arm_write_timeout(write_progress_ + context_.limits.write_timeout);
  while (!frames_.empty() && state_ != State::closed) {
    if (!corked && frames_.size() > 1) corked = cork(true);
    auto [error, n] =
        co_await ws_.async_write(asio::buffer(frames_.front().text), as_tuple(use_awaitable));
    write_progress_ = std::chrono::steady_clock::now();
    Frame& written = frames_.front();
    if (written.event_of) written.event_of->written(1);
    unwritten_ -= written.text.size();
    frames_.pop_front();
    if (error) {
      close();
      break;
    }
  }
  write_deadline_.cancel();
  if (corked && state_ != State::closed) cork(false);
  writing_ = false;
  settle();
}

bool WsSession::cork(bool on) {
  int value = on ? 1 : 0;
  auto& socket = beast::get_lowest_layer(ws_).socket();
  return ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_CORK, &value, sizeof value) == 0;
}

void WsSession::settle() {
  if (ended()) return;
  if (waiting_for_room_ && (state_ != State::open || !read_budget_spent())) wake_.cancel();
  bool done = state_ == State::draining && inflight() == 0 && frames_.empty() && !writing_;
  if (!done) return;
  state_ = State::closing;
  asio::co_spawn(
      strand_, [self = self()] { return self->close_gracefully(); },
      LogTaskFailure("WebSocket connection graceful close"));
}

// The read still pending sees the client's answer to our close frame and ends.
asio::awaitable<void> WsSession::close_gracefully() {
  co_await ws_.async_close(websocket::close_code::going_away, as_tuple(use_awaitable));
  close();
}

// A frame cannot be cut short to make room for a notice, so a WebSocket client that takes
// nothing for the write timeout is closed with only the log to say why (the socket's own
// `closing` notice has no WebSocket counterpart). Beast reports progress per frame, not per
// byte: the timeout is per frame, and frames are at most a few MiB.
void WsSession::arm_write_timeout(std::chrono::steady_clock::time_point deadline) {
  write_deadline_.expires_at(deadline);
  write_deadline_.async_wait([self = self()](boost::system::error_code error) {
    // A wait that ended as the loop did (its cancel came too late) finds no write in flight.
    if (error || self->state_ == State::closed || !self->writing_) return;
    auto progress_deadline = self->write_progress_ + self->context_.limits.write_timeout;
    if (progress_deadline > std::chrono::steady_clock::now()) {
      self->arm_write_timeout(progress_deadline);
      return;
    }
    spdlog::warn(
        "connection {} (WebSocket): closing, no output taken for {} ms; {} messages "
        "not delivered",
        self->conn(), self->context_.limits.write_timeout.count(), self->frames_.size());
    self->close();
  });
}

void WsSession::close() {
  if (state_ == State::closed) return;
  state_ = State::closed;
  boost::system::error_code ignored;
  beast::get_lowest_layer(ws_).socket().close(ignored);
  wake_.cancel();
  write_deadline_.cancel();
  disconnect();
  context_.registry.remove(this);
  spdlog::debug("connection {} (WebSocket) closed", conn());
}

}  // namespace tenure
