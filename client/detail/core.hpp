#pragma once
// The engine of tenure::client: one connection (Unix socket or WebSocket) driven by an io_context
// on its own thread. Requests are pipelined (one write in flight, the rest queued) and matched to
// their replies by id; every call has a timer; `lost` notices go to their lease and watch events to
// their watch. A dropped connection fails what was in flight, tells leases and watches (which
// resume by themselves) and is reopened by the next call.
//
// With several endpoints (the nodes of a cluster) a connection is opened to the first that
// accepts, in order from the one in use; a connection that breaks, or a call that gets no reply
// in time, moves the next connection on to the following endpoint.
//
// Everything below runs on the io thread except the constructor, the destructor and post().
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/detail/stream.hpp"
#include "protocol/message.hpp"
#include "protocol/request.hpp"
#include "protocol/result.hpp"

namespace tenure::client::detail {

namespace asio = boost::asio;
using protocol::Message;
using std::chrono::milliseconds;
template <typename T>
using Result = protocol::Result<T>;

// Called exactly once, on the io thread.
using ReplyHandler = std::function<void(Result<Message>)>;

// What a lease or a watch needs to hear from the connection.
class Listener {
 public:
  virtual ~Listener() = default;
  virtual void on_message(const Message& message) = 0;  // `lost`, or an event of its watch
  virtual void on_disconnect(std::uint64_t generation) = 0;
};

class Core {
 public:
  using StreamFactory = std::function<std::shared_ptr<Stream>(asio::io_context&)>;
  struct Endpoint {
    std::string address;  // names the daemon in messages (a socket path or a URL)
    StreamFactory make_stream;
  };
  // REQUIRES: at least one endpoint.
  Core(std::vector<Endpoint> endpoints, milliseconds timeout);
  ~Core();  // REQUIRES: not called on the io thread
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  asio::io_context& io() { return io_; }
  // The endpoint in use (or tried next).
  const std::string& address() const { return endpoints_[current_].address; }
  milliseconds timeout() const { return timeout_; }
  bool on_io_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Sends `request` (connecting first if needed) and calls `handler` with the reply, a failure,
  // or a timeout after `timeout` plus `extra`.
  void call(const protocol::Request& request, milliseconds extra, ReplyHandler handler);
  // Runs a blocking call from another thread (on the io thread: the failure below).
  Result<Message> call_blocking(const protocol::Request& request, milliseconds extra = {});

  static protocol::Failure blocking_on_io_thread();

  // The generation of the current connection: it changes on every reconnect. 0: none yet.
  std::uint64_t generation() const { return generation_; }
  // Connects if not connected; the failure names the problem.
  std::optional<protocol::Failure> ensure_connected();

  // Registrations (keyed by what the server's messages carry).
  void add_lease(const std::string& key, std::uint64_t token, std::weak_ptr<Listener> lease);
  void drop_lease(const std::string& key, std::uint64_t token);
  void add_watch(std::uint64_t watch_id, std::weak_ptr<Listener> watch);
  void drop_watch(std::uint64_t watch_id);

 private:
  struct Pending {
    ReplyHandler handler;
    std::unique_ptr<asio::steady_timer> timer;
  };

  void send(std::string line);
  void write_next();
  void read_more();
  void on_line(std::string line);
  void disconnect(std::string reason);
  void finish(std::uint64_t id, Result<Message> result);
  void move_on();  // the next connection goes to the next endpoint

  const std::vector<Endpoint> endpoints_;
  std::atomic<std::size_t> current_{0};
  milliseconds timeout_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::shared_ptr<Stream> stream_;  // set while connected
  std::uint64_t generation_ = 0;
  std::uint64_t next_id_ = 1;
  std::string inbox_;
  std::deque<std::string> outbox_;
  bool writing_ = false;
  std::map<std::uint64_t, Pending> pending_;
  std::map<std::pair<std::string, std::uint64_t>, std::weak_ptr<Listener>> leases_;
  std::map<std::uint64_t, std::weak_ptr<Listener>> watches_;
  std::string close_reason_;
  std::thread thread_;
};

}  // namespace tenure::client::detail
