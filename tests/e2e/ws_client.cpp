#include "tests/e2e/ws_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http.hpp>
#include <stdexcept>

namespace e2e {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::ip::tcp;

namespace {

tcp::endpoint loopback(unsigned short port) {
  return tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), port);
}

}  // namespace

WsClient::WsClient(unsigned short port, const WsOptions& options) : ws_(io_) {
  connect(port, options);
  if (status_ != 101) {
    throw std::runtime_error("WebSocket upgrade refused with HTTP " + std::to_string(status_));
  }
}

int WsClient::upgrade_status(unsigned short port, const WsOptions& options) {
  WsClient client(port, options, 0);
  return client.status_;
}

WsClient::WsClient(unsigned short port, const WsOptions& options, int) : ws_(io_) {
  connect(port, options);
}

void WsClient::connect(unsigned short port, const WsOptions& options) {
  beast::get_lowest_layer(ws_).socket().connect(loopback(port));
  ws_.set_option(websocket::stream_base::decorator([options](websocket::request_type& request) {
    if (!options.token.empty()) {
      request.set(http::field::authorization, "Bearer " + options.token);
    }
    if (options.origin) request.set(http::field::origin, *options.origin);
  }));
  ws_.read_message_max(64 << 20);
  websocket::response_type response;
  bool done = false;
  ws_.async_handshake(response, "127.0.0.1:" + std::to_string(port), "/v1/ws",
                      [&](beast::error_code) { done = true; });
  if (!pump([&] { return done; }, kReplyTimeout)) {
    throw std::runtime_error("no answer to the WebSocket upgrade");
  }
  status_ = static_cast<int>(response.result_int());
}

std::int64_t WsClient::send(std::string_view body) {
  std::int64_t id = next_id_++;
  send_text("{\"id\":" + std::to_string(id) + "," + std::string(body) + "}");
  return id;
}

void WsClient::send_text(std::string_view text) { write(text, false); }
void WsClient::send_binary(std::string_view bytes) { write(bytes, true); }

void WsClient::write(std::string_view bytes, bool binary) {
  if (closed_) throw std::runtime_error("write on a closed WebSocket: " + closed_reason_);
  ws_.binary(binary);
  bool done = false;
  beast::error_code result;
  ws_.async_write(asio::buffer(bytes.data(), bytes.size()),
                  [&](beast::error_code error, std::size_t) {
                    result = error;
                    done = true;
                  });
  if (!pump([&] { return done; }, Millis(30000))) {
    throw std::runtime_error("a WebSocket write did not finish");
  }
  if (result) throw std::runtime_error("WebSocket write failed: " + result.message());
}

void WsClient::read_next() {
  if (reading_ || closed_ || status_ != 101) return;
  reading_ = true;
  ws_.async_read(buffer_, [this](beast::error_code error, std::size_t) {
    reading_ = false;
    if (error) {
      closed_ = true;
      closed_reason_ = error.message();
      return;
    }
    route(beast::buffers_to_string(buffer_.data()));
    buffer_.consume(buffer_.size());
    read_next();
  });
}

void WsClient::route(std::string text) {
  std::string error;
  auto json = Json::parse(text, &error);
  if (!json) throw std::runtime_error("not JSON from the server (" + error + "): " + text);
  if (json->has("event")) {
    events_.push_back({*json, wall_now_ms()});
    ++events_received_;
  } else if (json->has("id")) {
    replies_[(*json)["id"].dump()].push_back(*json);
  } else {
    anonymous_.push_back(*json);
  }
}

bool WsClient::pump(const std::function<bool()>& done, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    read_next();
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    io_.restart();
    // Nothing left to run: the connection is gone and nothing more will come.
    if (io_.run_one_for(deadline - Clock::now()) == 0 && io_.stopped()) return done();
  }
}

Json WsClient::reply(std::int64_t id, Millis timeout) {
  std::string key = std::to_string(id);
  if (!pump([&] { return !replies_[key].empty() || closed_; }, timeout) || replies_[key].empty()) {
    throw std::runtime_error("no reply to request " + key +
                             (closed_ ? " (closed: " + closed_reason_ + ")" : ""));
  }
  Json r = replies_[key].front();
  replies_[key].pop_front();
  return r;
}

Json WsClient::call(std::string_view body, Millis timeout) { return reply(send(body), timeout); }

Json WsClient::anonymous_reply(Millis timeout) {
  if (!pump([&] { return !anonymous_.empty() || closed_; }, timeout) || anonymous_.empty()) {
    throw std::runtime_error("no reply without an id arrived");
  }
  Json r = anonymous_.front();
  anonymous_.pop_front();
  return r;
}

std::optional<ReceivedEvent> WsClient::next_event(Millis timeout) {
  if (!pump([&] { return !events_.empty() || closed_; }, timeout) || events_.empty()) {
    return std::nullopt;
  }
  ReceivedEvent e = events_.front();
  events_.pop_front();
  return e;
}

Json WsClient::event(Millis timeout) {
  auto e = next_event(timeout);
  if (!e) throw std::runtime_error("no event arrived");
  return e->event;
}

bool WsClient::wait_events(std::size_t count, Millis timeout) {
  return pump([&] { return events_received_ >= count || closed_; }, timeout) &&
         events_received_ >= count;
}

bool WsClient::wait_closed(Millis timeout) {
  return pump([&] { return closed_; }, timeout);
}

HttpResult http_get(unsigned short port, const std::string& target, Millis timeout) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  request.keep_alive(false);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  beast::error_code failure;
  stream.expires_after(timeout);
  stream.async_connect(loopback(port), [&](beast::error_code error) {
    if (error) {
      failure = error;
      return;
    }
    http::async_write(stream, request, [&](beast::error_code error, std::size_t) {
      if (error) {
        failure = error;
        return;
      }
      http::async_read(stream, buffer, response,
                       [&](beast::error_code error, std::size_t) { failure = error; });
    });
  });
  io.run();
  if (failure) throw std::runtime_error("GET " + target + ": " + failure.message());
  return {static_cast<int>(response.result_int()), std::string(response[http::field::content_type]),
          response.body()};
}

}  // namespace e2e
