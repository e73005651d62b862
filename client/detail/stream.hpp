#pragma once
// The byte pipe under Core: the Unix socket (one message per line) or a WebSocket (one message
// per text frame). Messages go out one at a time; what comes in is handed over as text in which
// every message ends with '\n', so that Core splits both alike.
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "core/default_paths.hpp"

namespace tenure::client::detail {

class Stream {
 public:
  using WriteHandler = std::function<void(std::error_code)>;
  using ReadHandler = std::function<void(std::error_code, std::string_view)>;

  virtual ~Stream() = default;
  // Connects (blocking; the peer is local). Empty on success, else the problem in words.
  virtual std::optional<std::string> connect() = 0;
  // REQUIRES: connected, no other write in flight; `message` lives until the handler runs.
  virtual void async_write(const std::string& message, WriteHandler handler) = 0;
  // REQUIRES: connected, no other read in flight.
  virtual void async_read(ReadHandler handler) = 0;
  virtual void close() = 0;
};

// Shared: a pending operation keeps its stream alive after Core dropped it.
std::shared_ptr<Stream> unix_stream(boost::asio::io_context& io, SocketChoice socket);
// `url`: ws://HOST:PORT/PATH. `token`: the bearer token for mutations, if any.
std::shared_ptr<Stream> websocket_stream(boost::asio::io_context& io, std::string url,
                                         std::optional<std::string> token);

// The common causes in words a user can act on, as the CLI says them.
std::string connect_problem(const std::error_code& ec);

}  // namespace tenure::client::detail
