#pragma once
// The HTTP/WebSocket listener (§2, §7, §7a), on the daemon's io_context: GET /v1/ws upgrades to
// a WebSocket session; the other routes are plain HTTP (http_routes.hpp). Every connection runs
// on a strand of its own. At most --max-connections are open at once, plain HTTP and WebSocket
// together; past that a request gets 503.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "transports/listen_address.hpp"
#include "transports/server_context.hpp"
#include "transports/upgrade_policy.hpp"

namespace tenure {

class HttpSession;

struct WebOptions {
  ListenAddress address;
  std::string token;                       // the bearer token of mutations (§7)
  std::vector<std::string> allow_origins;  // beyond the listener's own
  std::size_t max_connections = 1024;
  // A listening socket made by the service manager (socket activation), served instead of
  // binding `address`, which is then read from it.
  int inherited_fd = -1;
};

class WebServer {
 public:
  WebServer(boost::asio::io_context& io, ServerContext& context);

  // Binds and listens (or adopts options.inherited_fd); false with `error` if not.
  bool listen(WebOptions options, std::string& error);
  void start();
  // Stops accepting and closes the plain HTTP connections (WebSocket sessions are in the
  // context's registry). Blocks; call it from outside the io threads.
  void stop();
  // Where it listens, as http://HOST:PORT.
  std::string url() const;

  // For its connections.
  ServerContext& context() { return context_; }
  const UpgradePolicy& policy() const { return *policy_; }
  std::size_t http_connections() const;
  void forget(const HttpSession* session);

 private:
  bool adopt(int fd, std::string& error);
  boost::asio::awaitable<void> accept_loop();
  void admit(boost::asio::ip::tcp::socket socket, const Conversation::Strand& strand);

  boost::asio::io_context& io_;
  ServerContext& context_;
  boost::asio::ip::tcp::acceptor acceptor_;  // on a strand: stop() posts to it
  WebOptions options_;
  std::unique_ptr<UpgradePolicy> policy_;
  std::string url_;

  mutable std::mutex mutex_;
  std::condition_variable emptied_;
  std::unordered_map<const HttpSession*, std::weak_ptr<HttpSession>> sessions_;
};

}  // namespace tenure
