#include "transports/http_routes.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "transports/dashboard.hpp"
#include "transports/metrics_text.hpp"

namespace tenure {

namespace http = boost::beast::http;

namespace {

HttpResponse response(http::status status, std::string_view type, std::string body,
                      const HttpRequest& request) {
  HttpResponse r{status, request.version()};
  r.set(http::field::server, "tenured/" TENURE_VERSION);
  r.set(http::field::content_type, type);
  // Everything here is live: caches would only show stale numbers.
  r.set(http::field::cache_control, "no-store");
  r.set("X-Content-Type-Options", "nosniff");
  r.keep_alive(request.keep_alive());
  r.body() = std::move(body);
  r.prepare_payload();
  return r;
}

}  // namespace

std::string_view target_path(std::string_view target) {
  return target.substr(0, target.find_first_of("?#"));
}

HttpResponse text_response(http::status status, std::string_view text, unsigned version,
                           bool keep_alive) {
  HttpRequest request{http::verb::get, "/", version};
  request.keep_alive(keep_alive);
  return response(status, "text/plain; charset=utf-8", std::string(text) + "\n", request);
}

HttpResponse route(const HttpRequest& request, const ServerContext& context,
                   std::size_t http_connections) {
  std::string_view path = target_path(request.target());
  bool known = path == "/" || path == "/metrics" || path == "/healthz" || path == kWebSocketPath;
  if (!known) {
    return text_response(http::status::not_found, "not found", request.version(),
                         request.keep_alive());
  }
  if (request.method() != http::verb::get) {
    HttpResponse r = text_response(http::status::method_not_allowed, "only GET is served here",
                                   request.version(), request.keep_alive());
    r.set(http::field::allow, "GET");
    return r;
  }
  if (path == "/") {
    HttpResponse r = response(http::status::ok, "text/html; charset=utf-8",
                              std::string(dashboard_html()), request);
    r.set("X-Frame-Options", "DENY");
    r.set("Referrer-Policy", "no-referrer");
    return r;
  }
  if (path == "/metrics") {
    return response(http::status::ok, "text/plain; version=0.0.4; charset=utf-8",
                    metrics_text(context, http_connections), request);
  }
  if (path == "/healthz") {
    bool healthy = context.engine.healthy();
    return text_response(healthy ? http::status::ok : http::status::service_unavailable,
                         healthy ? "ok" : "unhealthy: the ledger does not accept writes",
                         request.version(), request.keep_alive());
  }
  HttpResponse r = text_response(http::status::upgrade_required,
                                 "this is the WebSocket endpoint: connect with a WebSocket client",
                                 request.version(), request.keep_alive());
  r.set(http::field::upgrade, "websocket");
  r.set(http::field::connection, "Upgrade");
  return r;
}

}  // namespace tenure
