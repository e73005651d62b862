#pragma once
// One client connection on the Unix socket (§2): NDJSON with pipelining. Lines are cut out of
// the input and served by the Conversation; every message goes into one outgoing buffer, written
// by a single writer that takes all that queued up meanwhile in one write.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "transports/conversation.hpp"
#include "transports/peer_credentials.hpp"

namespace tenure {

class UnixSession final : public Conversation {
 public:
  using Socket = boost::asio::local::stream_protocol::socket;

  UnixSession(Socket socket, Strand strand, ServerContext& context, Peer peer);
  ~UnixSession() override;

  void start();
  void drain() override;
  void abort() override;

 private:
  enum class State {
    open,      // reading requests
    draining,  // no more reading; closes once every request is answered and written
    flushing,  // no more reading; closes once what is queued is written
    closing,   // everything is written; waiting for the client to take it
    closed,
  };

  // On the strand's own type, not type-erased: then Asio hands a completion to the strand in the
  // connection's memory too (handler_allocator), where an any_io_executor drops the allocator.
  template <typename T>
  using Task = boost::asio::awaitable<T, Strand>;

  std::shared_ptr<UnixSession> self() {
    return std::static_pointer_cast<UnixSession>(shared_from_this());
  }
  Task<void> read_loop();
  Task<void> wait_for_room();
  // Runs as long as the connection: writes what write_at_once could not, and all that queued up
  // meanwhile, in one write; each piece the client takes restarts the write timeout.
  Task<void> write_loop();
  Task<void> close_gracefully();
  // The write timeout passed: drops what is not written, tells the client so and closes.
  Task<void> close_unread(std::size_t written);
  void arm_write_timeout();
  std::optional<std::string_view> next_line();
  bool make_room_for_input();
  // Serves the buffered lines until none is whole or the read budget is spent.
  void serve_lines();
  void handle_line(std::string_view line);

  void queue(MessageFormat format, const std::shared_ptr<Subscription>& event_of) override;
  std::size_t unwritten_bytes() const override { return pending_.size() + outgoing_.size(); }
  bool ended() const override { return state_ == State::closing || state_ == State::closed; }
  void settle() override;

  // Writes the output at once if the write loop waits for some (write_at_once, deferred).
  void start_writing();
  // Writes what is queued without waiting; what the socket does not take wakes the write loop.
  void write_at_once();
  // The write of `outgoing_` is done: it is emptied for the next one.
  void wrote_all();
  void stop_reading(State next);
  void close();

  Socket socket_;
  // The read loop waits on it while reading is paused; a graceful close, for its deadline.
  boost::asio::steady_timer wake_;
  boost::asio::steady_timer write_deadline_;
  boost::asio::steady_timer wake_writer_;  // the write loop waits on it while there is no output
  bool writer_idle_ = false;               // it is waiting
  bool write_deferred_ = false;            // a write_at_once is on its way
  bool unread_ = false;                    // the write timeout passed
  boost::asio::cancellation_signal stop_read_;
  Peer peer_;
  State state_ = State::open;
  bool waiting_for_room_ = false;
  bool writing_ = false;  // a write is in flight

  // Input: [begin_, end_) is unconsumed, [begin_, scan_) is known to hold no newline.
  std::string input_;
  std::size_t begin_ = 0;
  std::size_t scan_ = 0;
  std::size_t end_ = 0;
  Millis read_at_ = 0;  // when the bytes being parsed were read (§4: requests are timed then)

  std::string pending_;   // formatted, waiting for the next write
  std::string outgoing_;  // in the write in flight
  EventsInBuffer pending_events_;
  EventsInBuffer outgoing_events_;
};

}  // namespace tenure
