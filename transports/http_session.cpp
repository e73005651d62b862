#include "transports/http_session.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <optional>

#include "transports/task_failure.hpp"
#include "transports/web_server.hpp"
#include "transports/ws_session.hpp"

namespace tenure {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::as_tuple;
using asio::use_awaitable;

namespace {

// A request must arrive whole within this, and so must the next one on a kept-alive connection.
constexpr auto kRequestTimeout = std::chrono::seconds(15);
constexpr auto kWriteTimeout = std::chrono::seconds(15);
constexpr std::uint32_t kMaxHeader = 8 * 1024;
constexpr std::uint64_t kMaxBody = 8 * 1024;  // GET needs none; a little is tolerated

std::optional<std::string_view> header(const HttpRequest& request, http::field field) {
  auto found = request.find(field);
  if (found == request.end()) return std::nullopt;
  return std::string_view(found->value());
}

// The answer a failed read deserves, or none when the client went away or was too slow.
std::optional<http::status> status_for(const boost::system::error_code& error) {
  if (error == http::error::header_limit) return http::status::request_header_fields_too_large;
  if (error == http::error::body_limit) return http::status::payload_too_large;
  if (error == http::error::end_of_stream || error == http::error::partial_message) {
    return std::nullopt;
  }
  if (error.category() == http::make_error_code(http::error::bad_method).category()) {
    return http::status::bad_request;
  }
  return std::nullopt;
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, Conversation::Strand strand,
                         WebServer& server, bool refuse)
    : stream_(std::move(socket)), strand_(std::move(strand)), server_(server), refuse_(refuse) {}

HttpSession::~HttpSession() { server_.forget(this); }

void HttpSession::start() {
  asio::co_spawn(
      strand_, [self = shared_from_this()] { return self->run(); }, LogTaskFailure("HTTP session"));
}

void HttpSession::close() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->upgraded_) return;
    boost::system::error_code ignored;
    self->stream_.socket().close(ignored);
  });
}

asio::awaitable<void> HttpSession::run() {
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeader);
    parser.body_limit(kMaxBody);
    stream_.expires_after(kRequestTimeout);
    auto [error, n] =
        co_await http::async_read_header(stream_, buffer_, parser, as_tuple(use_awaitable));
    // A chunked body is refused unread: nothing here takes one, and Beast 1.81's chunk parser
    // asserts on a final chunk that arrives in pieces (boostorg/beast#2861).
    if (!error && !parser.chunked()) {
      auto [body_error, m] =
          co_await http::async_read(stream_, buffer_, parser, as_tuple(use_awaitable));
      error = body_error;
    }
    std::optional<HttpResponse> response = respond(error, parser);
    if (!response) break;
    bool keep_alive = response->keep_alive();
    stream_.expires_after(kWriteTimeout);
    auto [write_error, m] = co_await http::async_write(stream_, *response, as_tuple(use_awaitable));
    if (write_error || !keep_alive) break;
  }
  if (upgraded_) co_return;
  // Half-close first: the client reads our last answer, then the end.
  boost::system::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

std::optional<HttpResponse> HttpSession::respond(const boost::system::error_code& error,
                                                 http::request_parser<http::string_body>& parser) {
  if (error) {
    auto status = status_for(error);
    if (!status) return std::nullopt;
    return text_response(*status, error.message(), 11, false);
  }
  const HttpRequest& request = parser.get();
  if (parser.chunked()) {
    return text_response(http::status::length_required,
                         "a request body must come with Content-Length (8 KiB at most), not "
                         "chunked",
                         request.version(), false);
  }
  if (refuse_) {
    // Not 503: that is /healthz's word for a ledger that refuses writes (§7a), and any local
    // user can fill the slots.
    return text_response(http::status::too_many_requests, "too many connections; try again later",
                         request.version(), false);
  }
  if (target_path(request.target()) != kWebSocketPath || !beast::websocket::is_upgrade(request)) {
    return route(request, server_.context(), server_.http_connections());
  }
  auto origin = header(request, http::field::origin);
  if (!server_.policy().origin_allowed(origin)) {
    spdlog::info("refused a WebSocket handshake from origin {}", *origin);
    return text_response(http::status::forbidden,
                         "this origin may not open a WebSocket here (see --ws-allow-origin)",
                         request.version(), false);
  }
  upgrade(parser.release());
  return std::nullopt;
}

void HttpSession::upgrade(HttpRequest request) {
  auto authorization = header(request, http::field::authorization);
  Credentials credentials = server_.policy().credentials(authorization);
  if (authorization && credentials.unauthenticated) {
    spdlog::warn("a WebSocket client sent a bearer token that is not the server's");
  }
  upgraded_ = true;
  server_.forget(this);  // counted as a WebSocket from now on
  auto session = std::make_shared<WsSession>(std::move(stream_), strand_, server_.context(),
                                             std::move(credentials));
  server_.context().registry.add(session);
  session->start(std::move(request));
}

}  // namespace tenure
