#include "bench/load/etcd_client.hpp"

#include <simdjson.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <stdexcept>
#include <vector>

#include "bench/load/pipelined_stream.hpp"
#include "core/base64.hpp"
#include "storage/etcd_json.hpp"

namespace tenure::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

using storage::int64_field;

namespace {

// A failed call: the gateway's gRPC error message, or what went wrong on our side.
struct Failure {
  std::string kind;
};

struct Stream {
  explicit Stream(asio::any_io_executor ex) : socket(std::move(ex)) {}
  beast::tcp_stream socket;
  beast::flat_buffer buffer;
  bool connected = false;
};

class EtcdClient final : public LockClient {
 public:
  EtcdClient(const Config& config, asio::any_io_executor ex)
      : ex_(std::move(ex)), max_streams_(config.pipeline) {
    auto colon = config.endpoint.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("--endpoint must be HOST:PORT");
    host_ = config.endpoint.substr(0, colon);
    port_ = config.endpoint.substr(colon + 1);
  }

  asio::awaitable<void> connect() override {
    endpoints_ =
        co_await asio::ip::tcp::resolver(ex_).async_resolve(host_, port_, asio::use_awaitable);
    Stream* first = co_await checkout();
    if (!first) throw std::runtime_error("etcd: cannot connect to " + host_ + ":" + port_);
    checkin(first);
  }

  asio::awaitable<OpResult> acquire(const LockArgs& args, Hold& hold) override {
    if (hold.lease_id == 0) {
      auto ttl_s = (args.ttl_ms + 999) / 1000;
      std::string body = "{\"TTL\":" + std::to_string(ttl_s) + "}";
      simdjson::dom::element grant;
      if (auto failure = co_await post("/v3/lease/grant", body, grant)) co_return failed(*failure);
      hold.lease_id = int64_field(grant, "ID");
      if (hold.lease_id == 0) co_return OpResult{Outcome::error, 0, "grant_without_id"};
    }
    std::string key = base64(args.key);
    std::string body =
        R"({"compare":[{"key":")" + key + R"(","result":"EQUAL","target":"CREATE",)" +
        R"("create_revision":"0"}],"success":[{"request_put":{"key":")" + key + R"(","value":")" +
        base64(args.owner) + R"(","lease":")" + std::to_string(hold.lease_id) + R"("}}]})";
    simdjson::dom::element txn;
    if (auto failure = co_await post("/v3/kv/txn", body, txn)) {
      // The lease ran out between grant and txn (or while retrying): grant anew next time.
      if (failure->kind == "lease_not_found") hold.lease_id = 0;
      co_return failed(*failure);
    }
    bool succeeded = false;  // proto3 JSON leaves out a false `succeeded`
    if (txn["succeeded"].get(succeeded) || !succeeded) co_return OpResult{Outcome::held, 0, {}};
    simdjson::dom::element header;
    if (txn["header"].get(header)) co_return OpResult{Outcome::error, 0, "txn_without_header"};
    hold.token = static_cast<std::uint64_t>(int64_field(header, "revision"));
    co_return OpResult{Outcome::acquired, hold.token, {}};
  }

  asio::awaitable<OpResult> renew(const LockArgs&, Hold& hold) override {
    simdjson::dom::element reply;
    std::string body = R"({"ID":")" + std::to_string(hold.lease_id) + "\"}";
    if (auto failure = co_await post("/v3/lease/keepalive", body, reply)) {
      co_return failed(*failure);
    }
    simdjson::dom::element result;
    if (reply["result"].get(result) || int64_field(result, "TTL") <= 0) {
      co_return OpResult{Outcome::not_holder, 0, {}};
    }
    co_return OpResult{Outcome::renewed, hold.token, {}};
  }

  asio::awaitable<OpResult> release(const LockArgs&, Hold& hold) override {
    auto result = co_await revoke(hold);
    if (!result) co_return OpResult{Outcome::released, hold.token, {}};
    if (result->kind == "lease_not_found") co_return OpResult{Outcome::not_holder, 0, {}};
    co_return failed(*result);
  }

  asio::awaitable<void> abandon(Hold& hold) override {
    if (hold.lease_id != 0) co_await revoke(hold);
  }

  void close() override {
    closed_ = true;
    for (auto& stream : all_) stream->socket.close();
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& waiter : waiting)
      asio::post(ex_, [w = std::move(waiter)]() mutable { std::move(w)(nullptr); });
  }

 private:
  static OpResult failed(const Failure& f) { return {Outcome::error, 0, f.kind}; }

  asio::awaitable<std::optional<Failure>> revoke(Hold& hold) {
    std::string body = R"({"ID":")" + std::to_string(hold.lease_id) + "\"}";
    hold.lease_id = 0;
    simdjson::dom::element ignored;
    co_return co_await post("/v3/lease/revoke", body, ignored);
  }

  // An idle HTTP connection, a new one while under the pool's size, else the next one freed.
  // Null when the client is closed or cannot connect.
  asio::awaitable<Stream*> checkout() {
    if (closed_) co_return nullptr;
    if (!idle_.empty()) {
      Stream* s = idle_.back();
      idle_.pop_back();
      co_return s;
    }
    if (all_.size() < max_streams_) {
      all_.push_back(std::make_unique<Stream>(ex_));
      Stream* s = all_.back().get();
      auto [error, ep] =
          co_await s->socket.async_connect(endpoints_, asio::as_tuple(asio::use_awaitable));
      s->connected = !error;
      if (error) co_return nullptr;
      s->socket.socket().set_option(asio::ip::tcp::no_delay(true));
      co_return s;
    }
    co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(Stream*)>(
        [this](auto handler) { waiting_.emplace_back(std::move(handler)); }, asio::use_awaitable);
  }

  void checkin(Stream* s) {
    if (!s->connected || closed_) return;
    if (waiting_.empty()) return idle_.push_back(s);
    Waiter<Stream*> waiter = std::move(waiting_.front());
    waiting_.pop_front();
    asio::post(ex_, [w = std::move(waiter), s]() mutable { std::move(w)(s); });
  }

  // POSTs `body` to `path` and parses the JSON answer into `out`, which points into the shared
  // parser: valid only until the caller next suspends (callers read it at once).
  asio::awaitable<std::optional<Failure>> post(std::string_view path, std::string body,
                                               simdjson::dom::element& out) {
    Stream* s = co_await checkout();
    if (!s) co_return Failure{"closed"};
    http::request<http::string_body> request{http::verb::post, path, 11};
    request.set(http::field::host, host_);
    request.set(http::field::content_type, "application/json");
    request.body() = std::move(body);
    request.prepare_payload();
    auto [write_error, written] =
        co_await http::async_write(s->socket, request, asio::as_tuple(asio::use_awaitable));
    http::response<http::string_body> response;
    boost::system::error_code error = write_error;
    if (!error) {
      auto [read_error, read] = co_await http::async_read(s->socket, s->buffer, response,
                                                          asio::as_tuple(asio::use_awaitable));
      error = read_error;
    }
    if (error || !response.keep_alive()) s->connected = false;
    checkin(s);
    if (error) co_return Failure{closed_ ? "closed" : "http_" + error.message()};
    body_ = std::move(response.body());
    if (parser_.parse(body_).get(out)) co_return Failure{"bad_json"};
    if (response.result() != http::status::ok) {
      std::string_view message;
      if (!out["message"].get(message) && message.find("lease not found") != std::string::npos) {
        co_return Failure{"lease_not_found"};
      }
      co_return Failure{"http_" + std::to_string(response.result_int())};
    }
    co_return std::nullopt;
  }

  asio::any_io_executor ex_;
  std::string host_, port_;
  asio::ip::tcp::resolver::results_type endpoints_;
  std::size_t max_streams_;
  bool closed_ = false;
  std::vector<std::unique_ptr<Stream>> all_;
  std::vector<Stream*> idle_;
  std::deque<Waiter<Stream*>> waiting_;
  std::string body_;
  simdjson::dom::parser parser_;
};

}  // namespace

std::unique_ptr<LockClient> make_etcd_client(const Config& config, asio::any_io_executor ex) {
  return std::make_unique<EtcdClient>(config, std::move(ex));
}

}  // namespace tenure::bench
