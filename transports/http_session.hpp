#pragma once
// One plain HTTP connection of the web listener: requests are read with a deadline and header and
// body limits, answered in turn (keep-alive), and a WebSocket upgrade to /v1/ws hands the
// connection over to a WsSession once its Origin passes (else 403, §7).
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <memory>
#include <optional>

#include "transports/conversation.hpp"
#include "transports/http_routes.hpp"

namespace tenure {

class WebServer;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `refuse`: over the connection limit; the first request gets 503.
  HttpSession(boost::asio::ip::tcp::socket socket, Conversation::Strand strand, WebServer& server,
              bool refuse);
  ~HttpSession();

  void start();
  // Closes the connection unless it became a WebSocket. Any thread.
  void close();

 private:
  boost::asio::awaitable<void> run();
  // The answer to what was read, or none when the connection ends here (the client went away,
  // or it became a WebSocket).
  std::optional<HttpResponse> respond(
      const boost::system::error_code& error,
      boost::beast::http::request_parser<boost::beast::http::string_body>& parser);
  void upgrade(HttpRequest request);

  boost::beast::tcp_stream stream_;
  Conversation::Strand strand_;
  WebServer& server_;
  bool refuse_;
  bool upgraded_ = false;
  boost::beast::flat_buffer buffer_;
};

}  // namespace tenure
