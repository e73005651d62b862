#pragma once
// The plain HTTP face of the listener (§7a): GET / the dashboard, GET /metrics the Prometheus
// text, GET /healthz the ledger's health; /v1/ws only as a WebSocket upgrade (426 otherwise).
// Other paths are 404, other methods on these paths 405. A query string is ignored. (A chunked
// request body is refused with 411 by the session before any route.)
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string_view>

#include "transports/server_context.hpp"

namespace tenure {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

inline constexpr std::string_view kWebSocketPath = "/v1/ws";

// The path of a request target, without its query.
std::string_view target_path(std::string_view target);

// `http_connections`: open HTTP connections, for /metrics.
HttpResponse route(const HttpRequest& request, const ServerContext& context,
                   std::size_t http_connections);

// A short plain-text answer, for refusals and errors.
HttpResponse text_response(boost::beast::http::status status, std::string_view text,
                           unsigned version, bool keep_alive);

}  // namespace tenure
