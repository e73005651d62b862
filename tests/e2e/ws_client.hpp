#pragma once
// A blocking WebSocket client for tenured's /v1/ws, for tests, on Beast. Like LineClient, every
// wait is bounded and throws std::runtime_error when what it waits for does not come.
//
// The client reads only while one of its calls waits: a client nobody calls is a subscriber that
// does not read. Messages are routed like
// LineClient's: replies by `id`, events (`event` member) in order, replies without an id apart.
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "tests/e2e/json.hpp"
#include "tests/e2e/line_client.hpp"

namespace e2e {

// An event with the wall-clock time (ms since the epoch) it was read off the connection.
struct ReceivedEvent {
  Json event;
  std::int64_t arrived_ms = 0;
};

// How a WsClient connects; set what differs from the defaults: WsOptions().bearer(token).
struct WsOptions {
  std::string token;                  // sent as `Authorization: Bearer` unless empty
  std::optional<std::string> origin;  // sent as `Origin` when set

  WsOptions& bearer(std::string t) { return token = std::move(t), *this; }
  WsOptions& from(std::string o) { return origin = std::move(o), *this; }
};

class WsClient {
 public:
  // Connects to 127.0.0.1:port and upgrades; throws when the server refuses.
  explicit WsClient(unsigned short port, const WsOptions& options = WsOptions());
  WsClient(const WsClient&) = delete;
  WsClient& operator=(const WsClient&) = delete;

  // The HTTP status of an upgrade attempt: 101 when accepted, else the refusal's.
  static int upgrade_status(unsigned short port, const WsOptions& options);

  // Sends `{"id":N,<body>}` with a fresh id N and returns N.
  std::int64_t send(std::string_view body);
  void send_text(std::string_view text);
  void send_binary(std::string_view bytes);

  Json reply(std::int64_t id, Millis timeout = kReplyTimeout);
  Json call(std::string_view body, Millis timeout = kReplyTimeout);
  Json anonymous_reply(Millis timeout = kReplyTimeout);
  // The next event, or none within timeout.
  std::optional<ReceivedEvent> next_event(Millis timeout);
  Json event(Millis timeout = kReplyTimeout);
  // Waits until `count` events have arrived (taken or not) in total; false on timeout.
  bool wait_events(std::size_t count, Millis timeout);
  // Every event received and not yet taken, oldest first.
  std::deque<ReceivedEvent>& events() { return events_; }
  bool closed() const { return closed_; }
  // Waits until the server closes the connection.
  bool wait_closed(Millis timeout);

 private:
  using Clock = std::chrono::steady_clock;
  WsClient(unsigned short port, const WsOptions& options, int);  // whatever the status
  void connect(unsigned short port, const WsOptions& options);
  void read_next();
  void route(std::string text);
  // Runs the client's I/O until `done` holds or the timeout passes; false on timeout.
  bool pump(const std::function<bool()>& done, Millis timeout);
  void write(std::string_view bytes, bool binary);

  boost::asio::io_context io_;
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  boost::beast::flat_buffer buffer_;
  int status_ = 0;  // of the upgrade; reading starts once it is 101
  bool reading_ = false;
  bool closed_ = false;
  std::string closed_reason_;
  std::int64_t next_id_ = 1;
  std::map<std::string, std::deque<Json>> replies_;  // by compact id
  std::deque<Json> anonymous_;
  std::deque<ReceivedEvent> events_;
  std::size_t events_received_ = 0;
};

struct HttpResult {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET http://127.0.0.1:port<target>; throws on a transport failure or timeout.
HttpResult http_get(unsigned short port, const std::string& target, Millis timeout = kReplyTimeout);

}  // namespace e2e
