#include "transports/unix_server.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

#include "transports/acceptor.hpp"
#include "transports/peer_credentials.hpp"
#include "transports/reply_format.hpp"
#include "transports/socket_path.hpp"
#include "transports/task_failure.hpp"
#include "transports/unix_session.hpp"

namespace tenure {

namespace asio = boost::asio;
using asio::as_tuple;
using asio::use_awaitable;

UnixServer::UnixServer(asio::io_context& io, ServerContext& context, std::size_t max_connections,
                       SocketAccess access)
    : io_(io),
      context_(context),
      max_connections_(max_connections),
      access_(access),
      acceptor_(asio::make_strand(io)) {}

bool UnixServer::listen(const std::string& path, std::string& error) {
  if (!claim_socket_path(path, error)) return false;
  boost::system::error_code ec;
  asio::local::stream_protocol::endpoint endpoint(path);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (ec) {
    error = "cannot bind " + path + ": " + ec.message();
    return false;
  }
  path_ = path;
  owns_path_ = true;
  // Nobody can connect before listen(), so the file's access is settled before anyone may.
  if (access_.group && ::chown(path.c_str(), static_cast<uid_t>(-1), *access_.group) != 0) {
    error = "cannot set the group of " + path + ": " + std::strerror(errno);
    return false;
  }
  if (::chmod(path.c_str(), access_.mode) != 0) {
    error = "cannot set the mode of " + path + ": " + std::strerror(errno);
    return false;
  }
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error = "cannot listen on " + path + ": " + ec.message();
    return false;
  }
  return true;
}

bool UnixServer::adopt(int fd, std::string& error) {
  boost::system::error_code ec;
  acceptor_.assign(asio::local::stream_protocol(), fd, ec);
  if (!ec) path_ = acceptor_.local_endpoint(ec).path();
  if (ec) {
    error = "cannot use the inherited socket (fd " + std::to_string(fd) + "): " + ec.message();
    return false;
  }
  return true;
}

void UnixServer::start() {
  asio::co_spawn(acceptor_.get_executor(), accept_loop(), LogTaskFailure("socket accept loop"));
}

void UnixServer::stop() {
  close_acceptor(acceptor_);
  if (owns_path_) ::unlink(path_.c_str());
}

asio::awaitable<void> UnixServer::accept_loop() {
  return accept_connections(acceptor_, io_, path_,
                            [this](Socket socket, const Conversation::Strand& strand) {
                              admit(std::move(socket), strand);
                            });
}

void UnixServer::admit(Socket socket, const Conversation::Strand& strand) {
  auto peer = peer_of(socket.native_handle(), access_.admin_group);
  if (!peer) return;  // gone before we could ask who it was
  if (context_.registry.size(Transport::unix_socket) >= max_connections_) {
    std::string line;
    format_error(line, {},
                 {errc::too_many_requests,
                  "too many connections (at most " + std::to_string(max_connections_) + ")"});
    line.push_back('\n');
    asio::co_spawn(socket.get_executor(), refuse(std::move(socket), std::move(line)),
                   LogTaskFailure("socket connection refusal"));
    return;
  }
  auto session = std::make_shared<UnixSession>(std::move(socket), strand, context_, *peer);
  context_.registry.add(session);
  session->start();
}

asio::awaitable<void> UnixServer::refuse(Socket socket, std::string line) {
  co_await asio::async_write(socket, asio::buffer(line), as_tuple(use_awaitable));
  boost::system::error_code ignored;
  socket.close(ignored);
}

}  // namespace tenure
