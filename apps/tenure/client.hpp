#pragma once
// A connection to tenured's Unix socket: NDJSON both ways, requests numbered, replies matched to
// requests by id (contract §2, §3).
#include <cstdint>
#include <optional>
#include <string>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/message.hpp"
#include "core/clock.hpp"
#include "core/default_paths.hpp"

namespace tenure::cli {

using RequestId = std::uint64_t;

class Client {
 public:
  // Connects at once; throws CliError naming the path and the cause. `reply_timeout` bounds each
  // wait for a reply.
  Client(const SocketChoice& socket, Millis reply_timeout);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends the request line build(id) for a fresh id and returns that id, without waiting. Throws
  // ConnectionClosed when it could not be written: the server never got it.
  template <typename Build>
  RequestId send(Build&& build) {
    RequestId id = ++last_id_;
    write_line(build(id));
    return id;
  }

  // An error reply the server sent before closing the connection (e.g. too_many_requests), if it
  // is still to be read.
  std::optional<Message> last_words();

  // Waits for the reply to request `id`, skipping other lines (events, replies to other
  // requests). Throws CliError when none comes within `timeout` (default: the reply timeout).
  Message await_reply(RequestId id, std::optional<Millis> timeout = std::nullopt);

  // The next line from the server within timeout_ms (negative: no limit), or empty on timeout.
  // Throws ConnectionClosed when the connection ends.
  std::optional<Message> receive(int timeout_ms);

  // For callers that poll() the socket alongside other descriptors.
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  void write_line(std::string line);
  std::optional<std::string> take_line();

  std::string path_;
  Millis reply_timeout_;
  int fd_ = -1;
  RequestId last_id_ = 0;
  std::string inbox_;  // bytes read but not yet taken as lines
};

}  // namespace tenure::cli
