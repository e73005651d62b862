#include "transports/web_server.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/co_spawn.hpp>

#include "transports/acceptor.hpp"
#include "transports/http_session.hpp"
#include "transports/task_failure.hpp"

namespace tenure {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// How long stop() waits for plain HTTP connections to go once told to close.
constexpr auto kCloseTimeout = std::chrono::seconds(2);

}  // namespace

WebServer::WebServer(asio::io_context& io, ServerContext& context)
    : io_(io), context_(context), acceptor_(asio::make_strand(io)) {}

bool WebServer::listen(WebOptions options, std::string& error) {
  options_ = std::move(options);
  const tcp::endpoint& endpoint = options_.address.endpoint;
  boost::system::error_code ec;
  if (options_.inherited_fd >= 0) {
    if (!adopt(options_.inherited_fd, error)) return false;
  } else {
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      error = "cannot listen on " + options_.address.host + ":" + std::to_string(endpoint.port()) +
              ": " + ec.message();
      return false;
    }
  }
  unsigned short port = acceptor_.local_endpoint(ec).port();
  const std::string& host = options_.address.host;
  url_ = "http://" + (endpoint.address().is_v6() ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
  std::vector<std::string> origins = own_origins(host, port);
  origins.insert(origins.end(), options_.allow_origins.begin(), options_.allow_origins.end());
  policy_ = std::make_unique<UpgradePolicy>(options_.token, std::move(origins));
  return true;
}

bool WebServer::adopt(int fd, std::string& error) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  boost::system::error_code ec;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ec.assign(errno, boost::system::system_category());
  } else {
    acceptor_.assign(address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  }
  if (!ec) options_.address.endpoint = acceptor_.local_endpoint(ec);
  if (ec) {
    error = "cannot use the inherited TCP socket (fd " + std::to_string(fd) + "): " + ec.message();
    return false;
  }
  options_.address.host = options_.address.endpoint.address().to_string();
  return true;
}

std::string WebServer::url() const { return url_; }

void WebServer::start() {
  asio::co_spawn(acceptor_.get_executor(), accept_loop(), LogTaskFailure("web accept loop"));
}

void WebServer::stop() {
  close_acceptor(acceptor_);
  std::vector<std::shared_ptr<HttpSession>> open;
  {
    std::lock_guard lock(mutex_);
    for (const auto& entry : sessions_) {
      if (auto session = entry.second.lock()) open.push_back(std::move(session));
    }
  }
  for (auto& session : open) session->close();
  open.clear();
  std::unique_lock lock(mutex_);
  if (!emptied_.wait_for(lock, kCloseTimeout, [&] { return sessions_.empty(); })) {
    spdlog::warn("{} HTTP connections did not close in time", sessions_.size());
  }
}

std::size_t WebServer::http_connections() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

void WebServer::forget(const HttpSession* session) {
  std::lock_guard lock(mutex_);
  if (sessions_.erase(session) > 0 && sessions_.empty()) emptied_.notify_all();
}

asio::awaitable<void> WebServer::accept_loop() {
  return accept_connections(acceptor_, io_, url_,
                            [this](tcp::socket socket, const Conversation::Strand& strand) {
                              admit(std::move(socket), strand);
                            });
}

void WebServer::admit(tcp::socket socket, const Conversation::Strand& strand) {
  // Replies and events are small and latency matters (expiry notices): no Nagle delay.
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  bool refuse =
      http_connections() + context_.registry.size(Transport::websocket) >= options_.max_connections;
  auto session = std::make_shared<HttpSession>(std::move(socket), strand, *this, refuse);
  {
    std::lock_guard lock(mutex_);
    sessions_.emplace(session.get(), session);
  }
  session->start();
}

}  // namespace tenure
