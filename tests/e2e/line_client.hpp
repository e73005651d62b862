#pragma once
// A blocking NDJSON client for tenured's Unix socket, for tests. Every wait is bounded: a reply or
// event that does not come within its timeout throws std::runtime_error (which Catch2 reports as a
// failure naming the request), so a broken daemon fails a test instead of hanging it.
//
// Replies are matched by `id`; unsolicited `event` lines are kept in their own queue; replies
// without an id (to requests without one, or to lines the server could not parse) in a third.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/e2e/json.hpp"

namespace e2e {

using Millis = std::chrono::milliseconds;
inline constexpr Millis kReplyTimeout{10000};

class LineClient {
 public:
  // Connects to the Unix socket at path; throws std::runtime_error on failure.
  explicit LineClient(const std::string& socket_path);
  // Connects, or returns an empty optional and the reason in *error.
  static std::optional<LineClient> try_connect(const std::string& socket_path,
                                               std::string* error = nullptr);
  LineClient(LineClient&& other) noexcept;
  LineClient& operator=(LineClient&& other) noexcept;
  LineClient(const LineClient&) = delete;
  LineClient& operator=(const LineClient&) = delete;
  ~LineClient();

  void close();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // Sends `{"id":N,<body>}` with a fresh integer id N and returns N. body is the rest of the
  // object, e.g. `"op":"get","key":"a"`.
  std::int64_t send(std::string_view body);
  // Sends one line (a '\n' is appended); throws if the connection is closed.
  void send_line(std::string_view line);
  // Writes bytes as they are, reading replies meanwhile (so pipelining cannot deadlock). Returns
  // false if the server closed the connection before all was written.
  bool send_bytes(std::string_view bytes, Millis timeout = Millis(30000));

  // The reply with integer id N (waits for it).
  Json reply(std::int64_t id, Millis timeout = kReplyTimeout);
  // The reply whose id, as compact JSON, is id_json (e.g. `"abc"` or `42`).
  Json reply_with_id(const std::string& id_json, Millis timeout = kReplyTimeout);
  // send + reply.
  Json call(std::string_view body, Millis timeout = kReplyTimeout);
  // The next reply that carries no id.
  Json anonymous_reply(Millis timeout = kReplyTimeout);
  // True if a reply to id N has arrived (does not wait beyond reading what is there).
  bool has_reply(std::int64_t id);

  // The next unsolicited event (any type), or empty if none arrives within timeout.
  std::optional<Json> next_event(Millis timeout);
  // The next event; throws if none arrives within timeout.
  Json event(Millis timeout = kReplyTimeout);
  // Events received so far and not yet taken.
  std::size_t queued_events();

  // Reads for `window` and returns every line (reply or event) that arrived during it, in order.
  // Use to assert that nothing came. The lines stay queued.
  std::vector<std::string> unexpected_lines(Millis window);

  // Waits until the server closes the connection (EOF or reset). Lines read meanwhile are queued.
  bool wait_closed(Millis timeout);
  bool peer_closed() const { return eof_; }

  // Every line received so far, in order (replies and events alike).
  const std::vector<std::string>& lines() const { return lines_; }
  // Waits until at least n lines have been received in total.
  bool wait_lines(std::size_t n, Millis timeout);
  // Sends one line and returns the next line the server sends (parsed), whatever it is. For
  // requests whose reply may carry no id or an unusual one. Throws if nothing comes in time.
  Json roundtrip(std::string_view line, Millis timeout = kReplyTimeout);

  // The ids of replies in the order they arrived (compact JSON of each id).
  const std::vector<std::string>& arrival_order() const { return arrival_; }

  std::string describe() const;

 private:
  LineClient() = default;
  using Clock = std::chrono::steady_clock;
  // Waits until readable or deadline, then reads and dispatches what is there. Returns false on
  // timeout; sets eof_ on EOF.
  bool pump(Clock::time_point deadline);
  void read_available();
  void dispatch(std::string line);
  Json take_reply(const std::string& id_json, Millis timeout, std::string_view what);

  int fd_ = -1;
  std::int64_t next_id_ = 1;
  std::string in_;
  bool eof_ = false;
  std::string eof_reason_;
  std::map<std::string, std::deque<Json>> replies_;  // by compact id
  std::map<std::string, std::string> sent_;          // id -> request line, for messages
  std::deque<Json> anonymous_;
  std::deque<Json> events_;
  std::vector<std::string> arrival_;
  std::vector<std::string> lines_;  // every line received, in order
  std::string socket_path_;
};

}  // namespace e2e
