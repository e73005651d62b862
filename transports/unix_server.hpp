#pragma once
// Listens on the Unix socket (§2, §7): accepts connections, learns each peer's uid, and refuses
// those past --max-connections with a too_many_requests line. At shutdown it stops accepting
// and removes its socket file.
#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/strand.hpp>
#include <optional>
#include <string>

#include "transports/conversation.hpp"
#include "transports/server_context.hpp"

namespace tenure {

// Who may reach the socket and who is an admin there (§7).
struct SocketAccess {
  unsigned mode = 0600;
  std::optional<gid_t> group;        // the socket file's group; empty: the server's own
  std::optional<gid_t> admin_group;  // its members are admins besides root and the server's uid
};

class UnixServer {
 public:
  UnixServer(boost::asio::io_context& io, ServerContext& context, std::size_t max_connections,
             SocketAccess access = {});

  // Binds and listens on `path` (replacing a stale socket file); false with `error` if not.
  bool listen(const std::string& path, std::string& error);
  // Serves on a listening socket made by someone else (systemd's socket activation), whose file
  // is theirs: stop() leaves it. False with `error` if `fd` is not a listening Unix socket.
  bool adopt(int fd, std::string& error);
  void start();
  const std::string& path() const { return path_; }
  // Stops accepting and removes the socket file. Blocks; call it from outside the io threads.
  void stop();

 private:
  using Socket = boost::asio::local::stream_protocol::socket;

  boost::asio::awaitable<void> accept_loop();
  void admit(Socket socket, const Conversation::Strand& strand);
  static boost::asio::awaitable<void> refuse(Socket socket, std::string line);

  boost::asio::io_context& io_;
  ServerContext& context_;
  std::size_t max_connections_;
  SocketAccess access_;
  boost::asio::local::stream_protocol::acceptor acceptor_;  // on a strand: stop() posts to it
  std::string path_;
  bool owns_path_ = false;  // stop() removes the file
};

}  // namespace tenure
