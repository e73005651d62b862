#pragma once
// A pipelined Unix-socket connection: requests are appended to one outgoing buffer and written
// by a single writer in as few writes as possible; a reader hands whatever arrives to the
// protocol's parser. Replies are matched to callers by the subclass (by id, or in order).
// Single-threaded: everything runs on the executor the stream was made with.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <string>
#include <string_view>

namespace tenure::bench {

// Hands each complete `\n`-terminated line at the front of `data` to `on_line` (NDJSON);
// returns how many bytes that consumed.
template <typename OnLine>
std::size_t for_each_line(std::string_view data, OnLine on_line) {
  std::size_t used = 0;
  for (;;) {
    std::size_t newline = data.find('\n', used);
    if (newline == std::string_view::npos) return used;
    on_line(data.substr(used, newline - used));
    used = newline + 1;
  }
}

// A caller suspended until its reply arrives.
template <typename Reply>
using Waiter = boost::asio::any_completion_handler<void(Reply)>;

class PipelinedStream {
 public:
  explicit PipelinedStream(boost::asio::any_io_executor ex) : socket_(ex) {}
  virtual ~PipelinedStream() = default;

  // Connects and starts reading; throws on failure.
  boost::asio::awaitable<void> open(const std::string& path);
  void send(std::string_view bytes);
  void close();
  bool is_open() const { return open_; }
  // The server ended the connection while it was open.
  bool peer_closed() const { return peer_closed_; }

 protected:
  // Takes the complete messages at the front of `data`; returns how many bytes it consumed.
  virtual std::size_t consume(std::string_view data) = 0;
  // The connection is gone: fail every caller still waiting.
  virtual void fail_all() = 0;

  // Resumes a waiting caller from the event loop, not from inside the reader.
  template <typename Reply>
  void complete(Waiter<Reply> waiter, Reply reply) {
    boost::asio::post(socket_.get_executor(),
                      [waiter = std::move(waiter), reply = std::move(reply)]() mutable {
                        std::move(waiter)(std::move(reply));
                      });
  }

 private:
  boost::asio::awaitable<void> read_loop();
  boost::asio::awaitable<void> write_loop();

  boost::asio::local::stream_protocol::socket socket_;
  bool open_ = false;
  bool peer_closed_ = false;
  bool writing_ = false;
  std::string pending_;   // queued for the next write
  std::string outgoing_;  // in the write in flight
  std::string input_;
};

}  // namespace tenure::bench
