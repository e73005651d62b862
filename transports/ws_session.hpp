#pragma once
// One client connection on WebSocket (§2): one JSON request per text frame, one reply or event
// per text frame. Frames are read whole up to --max-frame; a longer message is read to its end
// and discarded (the reply is `frame_too_large`) so the connection stays in step and open. A
// binary message gets `bad_request`. Replies and events wait in a bounded queue of frames, one
// write in flight. The handshake, the close handshake and idle connections are timed by Beast's
// WebSocket timeouts (with keep-alive pings).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <string>

#include "transports/conversation.hpp"

namespace tenure {

class WsSession final : public Conversation {
 public:
  using Upgrade = boost::beast::http::request<boost::beast::http::string_body>;

  WsSession(boost::beast::tcp_stream stream, Strand strand, ServerContext& context,
            Credentials credentials);
  ~WsSession() override;

  // Answers the upgrade request and serves the connection.
  void start(Upgrade upgrade);
  void drain() override;
  void abort() override;

 private:
  enum class State {
    open,      // reading requests
    draining,  // no more requests; closes once every request is answered and written
    closing,   // the close handshake is under way
    closed,
  };
  struct Frame {
    std::string text;
    std::shared_ptr<Subscription> event_of;
  };
  struct Message {
    boost::system::error_code error;
    std::size_t size = 0;  // the whole message's, even when discarded
  };

  std::shared_ptr<WsSession> self() {
    return std::static_pointer_cast<WsSession>(shared_from_this());
  }
  boost::asio::awaitable<void> run(Upgrade upgrade);
  boost::asio::awaitable<Message> read_message();
  boost::asio::awaitable<void> wait_for_room();
  boost::asio::awaitable<void> write_loop();
  boost::asio::awaitable<void> close_gracefully();
  void handle_message(const Message& message);

  void queue(MessageFormat format, const std::shared_ptr<Subscription>& event_of) override;
  std::size_t unwritten_bytes() const override { return unwritten_; }
  bool ended() const override { return state_ == State::closing || state_ == State::closed; }
  void settle() override;

  // Closes the connection once no frame has been written for the write timeout, counted from
  // `write_progress_`. Armed once per run of the write loop, not per frame: cancelling a timer
  // hands its completion to another io thread, a wake-up per frame.
  void arm_write_timeout(std::chrono::steady_clock::time_point deadline);
  // Sets TCP_CORK; true when it took.
  bool cork(bool on);
  void close();

  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  boost::asio::steady_timer wake_;  // the read loop waits on it while reading is paused
  boost::asio::steady_timer write_deadline_;
  State state_ = State::open;
  bool accepted_ = false;  // the opening handshake is done
  bool waiting_for_room_ = false;
  bool writing_ = false;
  std::chrono::steady_clock::time_point write_progress_;  // the last frame written, or the start
  boost::beast::flat_buffer input_;
  std::deque<Frame> frames_;  // queued, the one being written first
  std::size_t unwritten_ = 0;
};

}  // namespace tenure
