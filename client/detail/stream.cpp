#include "client/detail/stream.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <cerrno>

namespace tenure::client::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

std::string connect_problem(const std::error_code& ec) {
  if (ec == std::errc::no_such_file_or_directory) return "no such file; is tenured running?";
  if (ec == std::errc::connection_refused) return "connection refused; is tenured running?";
  if (ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted) {
    return "permission denied; the socket belongs to another user";
  }
  return ec.message();
}

namespace {

// Opens `socket` CLOEXEC from the start, which Asio's own open() does not do (and the io thread
// may connect while another thread forks): a program the caller starts must not keep the
// connection, and a lease bound to it, alive.
template <typename Socket, typename Protocol>
void open_cloexec(Socket& socket, const Protocol& protocol, boost::system::error_code& ec) {
  int fd = ::socket(protocol.family(), protocol.type() | SOCK_CLOEXEC, protocol.protocol());
  if (fd < 0) {
    ec.assign(errno, boost::system::system_category());
    return;
  }
  socket.assign(protocol, fd, ec);
  if (ec) ::close(fd);
}

class UnixStream final : public Stream, public std::enable_shared_from_this<UnixStream> {
 public:
  UnixStream(asio::io_context& io, SocketChoice choice)
      : socket_(io), path_(std::move(choice.path)) {
    if (choice.also_looked_for) also_ = " (also looked for " + *choice.also_looked_for + ")";
  }

  std::optional<std::string> connect() override {
    boost::system::error_code ec;
    open_cloexec(socket_, asio::local::stream_protocol(), ec);
    if (!ec) socket_.connect(asio::local::stream_protocol::endpoint(path_), ec);
    if (!ec) return std::nullopt;
    boost::system::error_code ignored;
    socket_.close(ignored);
    return "cannot connect to " + path_ + ": " + connect_problem(ec) + also_;
  }

  void async_write(const std::string& message, WriteHandler handler) override {
    static constexpr char kNewline = '\n';
    std::array<asio::const_buffer, 2> buffers{asio::buffer(message), asio::buffer(&kNewline, 1)};
    asio::async_write(socket_, buffers,
                      [self = shared_from_this(), handler = std::move(handler)](
                          boost::system::error_code ec, std::size_t) { handler(ec); });
  }

  void async_read(ReadHandler handler) override {
    socket_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this(), handler = std::move(handler)](
                                boost::system::error_code ec, std::size_t n) {
                              handler(ec, std::string_view(self->buffer_.data(), n));
                            });
  }

  void close() override {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  asio::local::stream_protocol::socket socket_;
  std::string path_;
  std::string also_;  // " (also looked for ...)" when path_ is a default that is absent
  std::array<char, 65536> buffer_{};
};

class WebSocketStream final : public Stream, public std::enable_shared_from_this<WebSocketStream> {
 public:
  WebSocketStream(asio::io_context& io, std::string url, std::optional<std::string> token)
      : io_(io), ws_(io), url_(std::move(url)), token_(std::move(token)) {}

  std::optional<std::string> connect() override {
    // ws://HOST:PORT/PATH, HOST possibly [v6].
    std::string_view rest(url_);
    if (rest.substr(0, 5) != "ws://") return "not a ws:// URL: " + url_;
    rest.remove_prefix(5);
    std::string_view authority = rest.substr(0, rest.find('/'));
    std::string path =
        authority.size() < rest.size() ? std::string(rest.substr(authority.size())) : "/";
    auto colon = authority.rfind(':');
    bool has_port =
        colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos;
    std::string host(has_port ? authority.substr(0, colon) : authority);
    std::string port(has_port ? authority.substr(colon + 1) : "80");
    std::string bare_host =
        host.size() > 1 && host.front() == '[' ? host.substr(1, host.size() - 2) : host;

    boost::system::error_code ec;
    asio::ip::tcp::resolver resolver(io_);
    auto endpoints = resolver.resolve(bare_host, port, ec);
    auto& socket = beast::get_lowest_layer(ws_).socket();
    if (!ec) open_cloexec(socket, endpoints.begin()->endpoint().protocol(), ec);
    if (!ec) socket.connect(*endpoints.begin(), ec);
    if (ec) return "cannot connect to " + url_ + ": " + connect_problem(ec);
    ws_.set_option(websocket::stream_base::decorator([token = token_](websocket::request_type& r) {
      if (token) r.set(beast::http::field::authorization, "Bearer " + *token);
    }));
    ws_.text(true);
    websocket::response_type response;
    ws_.handshake(response, host + ":" + port, path, ec);
    if (ec) {
      std::string why = response.result_int() == 0
                            ? ec.message()
                            : "HTTP " + std::to_string(response.result_int());
      close();
      return url_ + " refused the WebSocket handshake: " + why;
    }
    return std::nullopt;
  }

  void async_write(const std::string& message, WriteHandler handler) override {
    ws_.async_write(asio::buffer(message),
                    [self = shared_from_this(), handler = std::move(handler)](
                        boost::system::error_code ec, std::size_t) { handler(ec); });
  }

  void async_read(ReadHandler handler) override {
    ws_.async_read(buffer_, [self = shared_from_this(), handler = std::move(handler)](
                                boost::system::error_code ec, std::size_t) {
      self->text_ = beast::buffers_to_string(self->buffer_.data());
      self->buffer_.consume(self->buffer_.size());
      self->text_.push_back('\n');
      handler(ec, ec ? std::string_view() : std::string_view(self->text_));
    });
  }

  void close() override {
    boost::system::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

 private:
  asio::io_context& io_;
  websocket::stream<beast::tcp_stream> ws_;
  std::string url_;
  std::optional<std::string> token_;
  beast::flat_buffer buffer_;
  std::string text_;
};

}  // namespace

std::shared_ptr<Stream> unix_stream(asio::io_context& io, SocketChoice socket) {
  return std::make_shared<UnixStream>(io, std::move(socket));
}

std::shared_ptr<Stream> websocket_stream(asio::io_context& io, std::string url,
                                         std::optional<std::string> token) {
  return std::make_shared<WebSocketStream>(io, std::move(url), std::move(token));
}

}  // namespace tenure::client::detail
