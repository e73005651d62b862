// Fuzzes the web listener's front door (§7, §7a) with the raw bytes of a connection: HTTP
// requests read with the session's limits, routed or checked as a WebSocket upgrade (Origin,
// bearer token); after an accepted upgrade, the rest are WebSocket frames whose text messages go
// to the request parser. Nothing may crash, every answer must serialize, and only the server's
// own token may authenticate.
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "tests/unit/engine_fixture.hpp"
#include "transports/http_routes.hpp"
#include "transports/request_parser.hpp"
#include "transports/upgrade_policy.hpp"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

constexpr std::string_view kToken = "fuzz-token";

// One engine for the whole run: /metrics and /healthz read it.
struct FrontDoor {
  tenure::test::EngineFixture fixture;
  tenure::ServerContext context{fixture.engine(), {}, 0, {}, {}};
  tenure::UpgradePolicy policy{std::string(kToken), tenure::own_origins("127.0.0.1", 7420)};
};

FrontDoor& front_door() {
  static FrontDoor door;
  return door;
}

std::optional<std::string_view> header(const tenure::HttpRequest& request, http::field field) {
  auto found = request.find(field);
  if (found == request.end()) return std::nullopt;
  return std::string_view(found->value());
}

// Feeds the front of `rest` to the parser until it has the header (`header_only`) or the whole
// request, as Beast's read does: a put that needs more gets more bytes, and since `rest` is all
// the connection sends, there are none; the connection ends there. False when the session would
// close the connection here (a bad or partial request: it answers it, if at all, and closes).
bool feed(std::string_view& rest, http::request_parser<http::string_body>& parser,
          bool header_only) {
  auto done = [&] { return header_only ? parser.is_header_done() : parser.is_done(); };
  beast::error_code error;
  while (!done()) {
    std::size_t used = rest.empty() ? 0 : parser.put(asio::buffer(rest.data(), rest.size()), error);
    rest.remove_prefix(used);
    if (error && error != http::error::need_more) return false;
    if (error || used == 0) {
      parser.put_eof(error);
      return !error && done();
    }
  }
  return true;
}

// Reads one request off the front of `rest` as the session does: the header, then a body unless
// it is chunked (the session answers that with 411 unread and closes).
bool read_request(std::string_view& rest, http::request_parser<http::string_body>& parser) {
  parser.header_limit(8 * 1024);
  parser.body_limit(8 * 1024);
  if (!feed(rest, parser, true) || parser.chunked()) return false;
  parser.eager(true);
  return feed(rest, parser, false);
}

// The WebSocket conversation after an accepted upgrade: every text message read is parsed.
void websocket_frames(const tenure::HttpRequest& upgrade, std::string_view frames) {
  asio::io_context io;
  beast::test::stream server(io);
  beast::test::stream client(io);
  server.connect(client);
  server.append(frames);
  server.close_remote();
  websocket::stream<beast::test::stream&> ws(server);
  ws.read_message_max(64 * 1024);
  beast::error_code error;
  ws.accept(upgrade, error);
  if (error) return;
  beast::flat_buffer buffer;
  for (int messages = 0; messages < 64; ++messages) {
    ws.read(buffer, error);
    if (error) return;
    if (ws.got_text()) {
      std::string_view text(static_cast<const char*>(buffer.data().data()), buffer.size());
      tenure::thread_request_parser().parse(text);
    }
    buffer.consume(buffer.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FrontDoor& door = front_door();
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  for (int requests = 0; requests < 16 && !rest.empty(); ++requests) {
    http::request_parser<http::string_body> parser;
    if (!read_request(rest, parser)) return 0;
    const tenure::HttpRequest& request = parser.get();
    if (tenure::target_path(request.target()) != tenure::kWebSocketPath ||
        !websocket::is_upgrade(request)) {
      tenure::HttpResponse response = tenure::route(request, door.context, 1);
      std::ostringstream out;
      out << response;
      if (out.str().empty()) std::abort();
      if (!response.keep_alive()) return 0;
      continue;
    }
    if (!door.policy.origin_allowed(header(request, http::field::origin))) return 0;
    auto authorization = header(request, http::field::authorization);
    tenure::Credentials credentials = door.policy.credentials(authorization);
    if (!credentials.unauthenticated &&
        (!authorization || authorization->find(kToken) == std::string_view::npos)) {
      std::abort();
    }
    websocket_frames(request, rest);
    return 0;
  }
  return 0;
}
