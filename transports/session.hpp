#pragma once
// One client connection on the Unix socket (§2): NDJSON with pipelining. Each line is parsed and
// handed to the engine at once, without waiting for the replies before it, so a waiting acquire
// holds back nothing. Replies come back on engine threads and are posted to the session's
// strand, formatted into one outgoing buffer, and written by a single writer that takes all
// that queued up meanwhile in one write. Unsolicited messages (lost, later watch events) enter
// the same buffer.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "actors/engine.hpp"
#include "transports/connection_keys.hpp"
#include "transports/peer_credentials.hpp"
#include "transports/request.hpp"
#include "transports/server_context.hpp"

namespace tenure {

class Session final : public std::enable_shared_from_this<Session>, public ConnectionListener {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;

  Session(Socket socket, ServerContext& context, Peer peer);
  ~Session() override;

  void start();
  // Stops reading; closes once every request read so far is answered and written (shutdown).
  void drain();
  // Closes now, whatever is unanswered or unwritten (a shutdown that could not drain).
  void abort();
  void on_lost(const Event& event) override;

  // Queues one message: `format` appends its JSON to the outgoing buffer. On the strand only.
  template <typename Format>
  void send(Format&& format) {
    if (ended()) return;
    if (unwritten() > context_.limits.max_output) return close_unread();
    format(pending_);
    pending_.push_back('\n');
    start_writing();
  }

 private:
  enum class State {
    open,      // reading requests
    draining,  // no more reading; closes once every request is answered and written
    flushing,  // no more reading; closes once what is queued is written
    closing,   // everything is written; waiting for the client to take it
    closed,
  };

  boost::asio::awaitable<void> read_loop();
  boost::asio::awaitable<void> wait_for_room();
  boost::asio::awaitable<void> write_loop();
  boost::asio::awaitable<void> close_gracefully();
  std::optional<std::string_view> next_line();
  bool make_room_for_input();
  void handle_line(std::string_view line);
  void dispatch(std::string id, RequestBody& body);
  template <typename Request, typename Result, typename OnResult>
  void call(void (Engine::*op)(Request, Reply<Result>), Request request, OnResult on_result);

  Caller caller() const { return Caller{peer_.uid, peer_.admin, conn_, read_at_}; }
  bool ended() const { return state_ == State::closing || state_ == State::closed; }
  bool reading_paused() const;
  std::size_t unwritten() const { return pending_.size() + outgoing_.size(); }
  void start_writing();
  void stop_reading(State next);
  // Moves on after a reply or a write: resumes reading, or closes when there is no more to do.
  void settle();
  void disconnect();
  void close_unread();
  void close();

  Socket socket_;
  ServerContext& context_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  // The read loop waits on it while reading is paused; a graceful close, for its deadline.
  boost::asio::steady_timer wake_;
  boost::asio::cancellation_signal stop_read_;
  Peer peer_;
  ConnId conn_ = 0;
  State state_ = State::open;
  bool waiting_for_room_ = false;
  bool writing_ = false;
  bool disconnected_ = false;

  // Input: [begin_, end_) is unconsumed, [begin_, scan_) is known to hold no newline.
  std::string input_;
  std::size_t begin_ = 0;
  std::size_t scan_ = 0;
  std::size_t end_ = 0;
  Millis read_at_ = 0;  // when the bytes being parsed were read (§4: requests are timed then)

  std::string pending_;   // formatted, waiting for the next write
  std::string outgoing_;  // in the write in flight
  std::size_t inflight_ = 0;
  ConnectionKeys keys_;
};

}  // namespace tenure
