#include "storage/etcd_client.hpp"

#include <poll.h>
#include <simdjson.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "core/base64.hpp"
#include "core/parse_number.hpp"
#include "storage/etcd_json.hpp"

namespace tenure::storage {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

namespace {

// Ranges of a whole slot or a page of events can be large; anything beyond is not etcd.
constexpr std::uint64_t kMaxResponse = 256u << 20;

bool bool_field(simdjson::dom::element object, std::string_view name) {
  bool value = false;
  if (object[name].get(value)) return false;
  return value;
}

bool bytes_field(simdjson::dom::element object, std::string_view name, std::string& out) {
  std::string_view text;
  if (object[name].get(text)) {
    out.clear();  // absent: empty
    return true;
  }
  auto decoded = base64_decode(text);
  if (!decoded) return false;
  out = std::move(*decoded);
  return true;
}

bool parse_kv(simdjson::dom::element object, KeyValue& kv) {
  kv.create_revision = int64_field(object, "create_revision");
  kv.mod_revision = int64_field(object, "mod_revision");
  kv.lease = int64_field(object, "lease");
  return bytes_field(object, "key", kv.key) && bytes_field(object, "value", kv.value);
}

bool parse_range(simdjson::dom::element object, RangeResult& result) {
  result.kvs.clear();
  result.more = bool_field(object, "more");
  simdjson::dom::element header;
  result.revision = object["header"].get(header) ? 0 : int64_field(header, "revision");
  simdjson::dom::array kvs;
  if (object["kvs"].get(kvs)) return true;  // none
  for (simdjson::dom::element item : kvs) {
    if (!parse_kv(item, result.kvs.emplace_back())) return false;
  }
  return true;
}

Status malformed(std::string_view what) {
  return Status(errc::rejected, "etcd answered with malformed JSON (" + std::string(what) + ")");
}

void append_quoted_base64(std::string& out, std::string_view bytes) {
  out += '"';
  base64_append(bytes, out);
  out += '"';
}

void append_key_range(std::string& out, std::string_view key, std::string_view range_end) {
  out += R"("key":)";
  append_quoted_base64(out, key);
  if (!range_end.empty()) {
    out += R"(,"range_end":)";
    append_quoted_base64(out, range_end);
  }
}

}  // namespace

Status parse_endpoints(std::string_view list, std::vector<std::string>& endpoints) {
  endpoints.clear();
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    constexpr std::string_view scheme = "http://";
    std::string_view rest = item.starts_with(scheme) ? item.substr(scheme.size()) : "";
    while (rest.ends_with('/')) rest.remove_suffix(1);
    auto colon = rest.rfind(':');
    bool ok = colon != std::string_view::npos && colon > 0 && colon + 1 < rest.size() &&
              rest.find('/') == std::string_view::npos;
    if (ok) {
      auto port = parse_number<unsigned>(rest.substr(colon + 1));
      ok = port && *port > 0 && *port < 65536;
    }
    if (!ok) {
      return Status(errc::rejected,
                    "etcd endpoint '" + std::string(item) + "' is not http://HOST:PORT");
    }
    endpoints.push_back(std::string(scheme) + std::string(rest));
  }
  if (endpoints.empty()) return Status(errc::rejected, "no etcd endpoint given");
  return {};
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key (etcd's convention)
}

void EtcdTxn::compare(std::string_view key, std::string_view range_end, std::string_view target,
                      std::int64_t revision) {
  if (!compares_.empty()) compares_ += ',';
  compares_ += R"({"target":")";
  compares_ += target;
  compares_ += R"(",)";
  append_key_range(compares_, key, range_end);
  compares_ += R"(,")";
  compares_ += target == "CREATE" ? "create_revision" : "mod_revision";
  compares_ += R"(":")";
  compares_ += std::to_string(revision);
  compares_ += R"("})";
}

void EtcdTxn::compare_create_revision(std::string_view key, std::int64_t revision,
                                      std::string_view range_end) {
  compare(key, range_end, "CREATE", revision);
}

void EtcdTxn::compare_mod_revision(std::string_view key, std::int64_t revision) {
  compare(key, {}, "MOD", revision);
}

void EtcdTxn::put(std::string_view key, std::string_view value, std::int64_t lease) {
  if (!success_.empty()) success_ += ',';
  success_ += R"({"request_put":{"key":)";
  append_quoted_base64(success_, key);
  success_ += R"(,"value":)";
  append_quoted_base64(success_, value);
  if (lease != 0) {
    success_ += R"(,"lease":")";
    success_ += std::to_string(lease);
    success_ += '"';
  }
  success_ += "}}";
  ++success_ops_;
  ++writes_;
}

void EtcdTxn::delete_key(std::string_view key) { delete_range(key, {}); }

void EtcdTxn::delete_range(std::string_view key, std::string_view range_end) {
  if (!success_.empty()) success_ += ',';
  success_ += R"({"request_delete_range":{)";
  append_key_range(success_, key, range_end);
  success_ += "}}";
  ++success_ops_;
  ++writes_;
}

void EtcdTxn::range(std::string_view key, std::string_view range_end, std::int64_t limit,
                    bool descend) {
  if (!success_.empty()) success_ += ',';
  success_ += R"({"request_range":{)";
  append_key_range(success_, key, range_end);
  if (limit > 0) success_ += R"(,"limit":")" + std::to_string(limit) + '"';
  if (descend) success_ += R"(,"sort_order":"DESCEND","sort_target":"KEY")";
  success_ += "}}";
  ++success_ops_;
}

void EtcdTxn::on_failure_range(std::string_view key, std::string_view range_end) {
  if (!failure_.empty()) failure_ += ',';
  failure_ += R"({"request_range":{)";
  append_key_range(failure_, key, range_end);
  failure_ += "}}";
}

std::string EtcdTxn::body() const {
  std::string out;
  out.reserve(bytes() + 40);
  out += R"({"compare":[)";
  out += compares_;
  out += R"(],"success":[)";
  out += success_;
  out += R"(],"failure":[)";
  out += failure_;
  out += "]}";
  return out;
}

void EtcdTxn::clear() {
  compares_.clear();
  success_.clear();
  failure_.clear();
  success_ops_ = 0;
  writes_ = 0;
}

// One keep-alive HTTP connection to one endpoint, with the io_context its calls run on: the
// calling thread runs it for the duration of a call.
struct EtcdClient::Connection {
  explicit Connection(std::size_t endpoint) : endpoint(endpoint), stream(io) {}
  std::size_t endpoint;
  asio::io_context io;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  simdjson::dom::parser json;
  bool connected = false;

  // An idle keep-alive connection that became readable was closed by etcd (or sent junk).
  bool stale() {
    if (!connected) return false;
    pollfd p{stream.socket().native_handle(), POLLIN, 0};
    return ::poll(&p, 1, 0) != 0;
  }
  void close() {
    beast::error_code ignored;
    stream.socket().close(ignored);
    buffer.clear();
    connected = false;
  }
  asio::awaitable<beast::error_code> connect(const Endpoint& where) {
    tcp::resolver resolver(io);
    auto [error, results] = co_await resolver.async_resolve(where.host, where.port, kTuple);
    if (error) co_return error;
    auto [connect_error, ignored] = co_await stream.async_connect(results, kTuple);
    if (connect_error) co_return connect_error;
    stream.socket().set_option(tcp::no_delay(true), connect_error);
    connected = true;
    co_return beast::error_code{};
  }
};

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {
  for (const std::string& url : options_.endpoints) {
    std::string_view rest(url);
    if (rest.starts_with("http://")) rest.remove_prefix(7);
    auto colon = rest.rfind(':');
    parsed_.push_back(
        Endpoint{std::string(rest.substr(0, colon)),
                 std::string(rest.substr(colon == rest.npos ? rest.size() : colon + 1))});
  }
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::current_endpoint() const {
  return options_.endpoints.empty() ? std::string()
                                    : options_.endpoints[preferred_.load() % parsed_.size()];
}

std::unique_ptr<EtcdClient::Connection> EtcdClient::checkout(std::size_t endpoint) const {
  std::unique_ptr<Connection> found;
  {
    std::lock_guard lock(mutex_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if ((*it)->endpoint != endpoint) continue;
      found = std::move(*it);
      idle_.erase(it);
      break;
    }
  }
  if (!found) return std::make_unique<Connection>(endpoint);
  if (found->stale()) found->close();
  return found;
}

void EtcdClient::checkin(std::unique_ptr<Connection> connection) const {
  if (!connection->connected) return;
  std::lock_guard lock(mutex_);
  // Connections to an endpoint no longer preferred are dropped on the way back.
  if (connection->endpoint != preferred_.load() % parsed_.size()) return;
  if (idle_.size() < 16) idle_.push_back(std::move(connection));
}

Status EtcdClient::post(std::string_view path, const std::string& body, bool retry_sent,
                        std::string& response) const {
  if (parsed_.empty()) return Status(errc::unreachable, "no etcd endpoint");
  std::size_t first = preferred_.load() % parsed_.size();
  std::string failures;
  for (std::size_t attempt = 0; attempt < parsed_.size(); ++attempt) {
    std::size_t index = (first + attempt) % parsed_.size();
    const Endpoint& where = parsed_[index];
    std::unique_ptr<Connection> c = checkout(index);
    bool sent = false;
    beast::error_code error;
    unsigned status = 0;
    c->io.restart();
    asio::co_spawn(
        c->io,
        [&]() -> asio::awaitable<void> {
          c->stream.expires_after(options_.timeout);
          if (!c->connected) {
            error = co_await c->connect(where);
            if (error) co_return;
          }
          http::request<http::span_body<const char>> request{
              http::verb::post, path, 11, http::span_body<const char>::value_type(body)};
          request.set(http::field::host, where.host);
          request.set(http::field::content_type, "application/json");
          request.keep_alive(true);
          request.prepare_payload();
          sent = true;
          auto [write_error, written] = co_await http::async_write(c->stream, request, kTuple);
          if ((error = write_error)) co_return;
          http::response_parser<http::string_body> parser;
          parser.body_limit(kMaxResponse);
          auto [read_error, read] = co_await http::async_read(c->stream, c->buffer, parser, kTuple);
          if ((error = read_error)) co_return;
          status = parser.get().result_int();
          response = std::move(parser.get().body());
          if (!parser.get().keep_alive()) c->close();
        },
        asio::detached);
    c->io.run();
    if (error) {
      c->close();
      failures += (failures.empty() ? "" : "; ") + options_.endpoints[index] + ": " +
                  (error == beast::error::timeout ? "timed out" : error.message());
      if (sent && !retry_sent) {
        return Status(errc::uncertain, "etcd " + options_.endpoints[index] + ": " +
                                           error.message() + " after the request was sent");
      }
      continue;
    }
    if (status == 200) {
      preferred_.store(index);
      checkin(std::move(c));
      return {};
    }
    // A gRPC error through the gateway: {"error": "...", "code": N, "message": "..."}.
    std::string message = response;
    simdjson::dom::element parsed;
    std::string_view text;
    if (!c->json.parse(response).get(parsed) && !parsed["message"].get(text)) message = text;
    checkin(std::move(c));
    // "no leader": the member refused before proposing anything, so another one may be asked.
    bool unavailable = status >= 500;
    bool not_proposed = message.find("no leader") != std::string::npos;
    if (unavailable && (retry_sent || not_proposed)) {
      failures += (failures.empty() ? "" : "; ") + options_.endpoints[index] + ": " + message;
      continue;
    }
    return Status(unavailable ? errc::uncertain : errc::rejected,
                  "etcd " + options_.endpoints[index] + ": " + message);
  }
  return Status(errc::unreachable, "no etcd endpoint answered: " + failures);
}

Status EtcdClient::range(const RangeRequest& request, RangeResult& result) const {
  std::string body = "{";
  append_key_range(body, request.key, request.range_end);
  if (request.limit > 0) body += R"(,"limit":")" + std::to_string(request.limit) + '"';
  if (request.descend) body += R"(,"sort_order":"DESCEND","sort_target":"KEY")";
  if (request.revision > 0) body += R"(,"revision":")" + std::to_string(request.revision) + '"';
  body += '}';
  std::string response;
  Status status = post("/v3/kv/range", body, true, response);
  if (!status.ok()) return status;
  simdjson::dom::parser parser;
  simdjson::dom::element parsed;
  if (parser.parse(response).get(parsed) || !parse_range(parsed, result)) return malformed("range");
  return {};
}

Status EtcdClient::get(std::string_view key, KeyValue& kv) const {
  RangeRequest request;
  request.key = std::string(key);
  RangeResult result;
  Status status = range(request, result);
  if (!status.ok()) return status;
  kv = result.kvs.empty() ? KeyValue{std::string(key), {}, 0, 0, 0} : std::move(result.kvs[0]);
  return {};
}

Status EtcdClient::put(std::string_view key, std::string_view value, std::int64_t lease) {
  std::string body = R"({"key":)";
  append_quoted_base64(body, key);
  body += R"(,"value":)";
  append_quoted_base64(body, value);
  if (lease != 0) body += R"(,"lease":")" + std::to_string(lease) + '"';
  body += '}';
  std::string response;
  return post("/v3/kv/put", body, true, response);  // the same put again is the same state
}

Status EtcdClient::delete_range(std::string_view key, std::string_view range_end) {
  std::string body = "{";
  append_key_range(body, key, range_end);
  body += '}';
  std::string response;
  return post("/v3/kv/deleterange", body, true, response);
}

Status EtcdClient::txn(const EtcdTxn& txn, EtcdTxnResult& result) {
  std::string response;
  Status status = post("/v3/kv/txn", txn.body(), txn.read_only(), response);
  if (!status.ok()) return status;
  simdjson::dom::parser parser;
  simdjson::dom::element parsed;
  if (parser.parse(response).get(parsed)) return malformed("txn");
  result.succeeded = bool_field(parsed, "succeeded");
  simdjson::dom::element header;
  result.revision = parsed["header"].get(header) ? 0 : int64_field(header, "revision");
  result.ranges.clear();
  simdjson::dom::array responses;
  if (parsed["responses"].get(responses)) return {};
  for (simdjson::dom::element item : responses) {
    simdjson::dom::element range;
    if (item["response_range"].get(range)) continue;
    if (!parse_range(range, result.ranges.emplace_back())) return malformed("txn range");
  }
  return {};
}

Status EtcdClient::lease_grant(std::int64_t ttl_seconds, std::int64_t& id) {
  std::string response;
  // Repeating a grant at worst leaves a lease nobody uses, which expires after its TTL.
  Status status = post("/v3/lease/grant", R"({"TTL":")" + std::to_string(ttl_seconds) + R"("})",
                       true, response);
  if (!status.ok()) return status;
  simdjson::dom::parser parser;
  simdjson::dom::element parsed;
  if (parser.parse(response).get(parsed)) return malformed("lease grant");
  id = int64_field(parsed, "ID");
  std::string_view error;
  if (!parsed["error"].get(error) && !error.empty())
    return Status(errc::rejected, std::string(error));
  if (id == 0) return malformed("lease grant without an ID");
  return {};
}

Status EtcdClient::lease_keepalive(std::int64_t id, std::int64_t& ttl) {
  std::string response;
  Status status =
      post("/v3/lease/keepalive", R"({"ID":")" + std::to_string(id) + R"("})", true, response);
  if (!status.ok()) return status;
  simdjson::dom::parser parser;
  simdjson::dom::element parsed, result;
  // A stream of one response: {"result":{"ID":..,"TTL":..}}; no TTL: the lease is gone.
  if (parser.parse(response).get(parsed) || parsed["result"].get(result)) {
    return malformed("lease keepalive");
  }
  ttl = int64_field(result, "TTL");
  return {};
}

Status EtcdClient::lease_revoke(std::int64_t id) {
  std::string response;
  Status status =
      post("/v3/lease/revoke", R"({"ID":")" + std::to_string(id) + R"("})", true, response);
  // Revoking a lease that is already gone is what was asked.
  if (!status.ok() && status.message().find("not found") != std::string::npos) return {};
  return status;
}

void EtcdClient::prefer(std::string_view endpoint) {
  for (std::size_t i = 0; i < options_.endpoints.size(); ++i) {
    if (options_.endpoints[i] == endpoint) preferred_.store(i);
  }
}

void EtcdClient::stop_watch() {
  watch_stop_.store(true);
  std::lock_guard lock(watch_mutex_);
  if (watch_cancel_) watch_cancel_();
}

Status EtcdClient::watch(std::string_view key, std::string_view range_end,
                         std::int64_t start_revision,
                         const std::function<void(std::vector<WatchEvent>& events)>& on_events,
                         const std::function<bool()>& keep_going) {
  std::int64_t next = start_revision;
  std::string failures;
  std::size_t failed_in_a_row = 0;
  while (!watch_stop_.load() && keep_going()) {
    std::string body = R"({"create_request":{)";
    append_key_range(body, key, range_end);
    body += R"(,"start_revision":")" + std::to_string(next) + R"("}})";
    std::size_t index = preferred_.load() % parsed_.size();
    bool delivered = false;
    Status status = watch_once(index, body, next, on_events, keep_going, delivered);
    if (status.ok()) continue;                           // the stream ended: reopen it
    if (status.code() == errc::rejected) return status;  // compacted, or refused: not transient
    if (delivered) failed_in_a_row = 0;
    failures += (failures.empty() ? "" : "; ") + status.message();
    // Another endpoint next time; once every one failed in a row, the caller hears of it.
    preferred_.compare_exchange_strong(index, (index + 1) % parsed_.size());
    if (++failed_in_a_row >= parsed_.size()) {
      return Status(errc::unreachable, "the etcd watch failed on every endpoint: " + failures);
    }
  }
  return {};
}

Status EtcdClient::watch_once(std::size_t index, const std::string& body,
                              std::int64_t& next_revision,
                              const std::function<void(std::vector<WatchEvent>& events)>& on_events,
                              const std::function<bool()>& keep_going, bool& delivered) {
  const Endpoint& where = parsed_[index];
  Connection c(index);
  Status result;
  std::string lines;         // the stream's bytes not yet parsed (a JSON object per line)
  std::size_t searched = 0;  // lines[0, searched) has no newline: a long line is scanned once
  std::vector<WatchEvent> events;
  // Parses every complete line; false (with `result` set) when the stream must end.
  auto consume = [&]() {
    std::size_t start = 0;
    for (std::size_t end; (end = lines.find('\n', std::max(start, searched))) != std::string::npos;
         start = end + 1) {
      std::string_view line(lines.data() + start, end - start);
      simdjson::dom::element parsed, response;
      if (c.json.parse(line.data(), line.size()).get(parsed)) {
        result = malformed("watch");
        return false;
      }
      if (parsed["result"].get(response)) {
        std::string_view message = "the watch ended";
        simdjson::dom::element error;
        if (!parsed["error"].get(error) && error["message"].get(message)) {
          message = "the watch ended";
        }
        result = Status(errc::unreachable, std::string(message));
        return false;
      }
      if (bool_field(response, "canceled")) {
        std::string_view reason = "the watch was canceled";
        if (response["cancel_reason"].get(reason)) reason = "the watch was canceled";
        auto compacted = int64_field(response, "compact_revision");
        result = Status(
            errc::rejected,
            std::string(reason) +
                (compacted ? " (compacted at revision " + std::to_string(compacted) + ")" : ""));
        return false;
      }
      simdjson::dom::array items;
      if (response["events"].get(items)) continue;  // created, or a progress notice
      events.clear();
      for (simdjson::dom::element item : items) {
        WatchEvent& event = events.emplace_back();
        std::string_view type;
        event.deleted = !item["type"].get(type) && type == "DELETE";
        simdjson::dom::element kv;
        if (item["kv"].get(kv) || !parse_kv(kv, event.kv)) {
          result = malformed("watch event");
          return false;
        }
      }
      if (!events.empty()) {
        next_revision = events.back().kv.mod_revision + 1;
        delivered = true;
        on_events(events);
      }
    }
    lines.erase(0, start);
    searched = lines.size();
    return true;
  };

  bool closing = false;  // we closed the stream (stop or keep_going): not an error
  asio::steady_timer poll(c.io);
  asio::co_spawn(
      c.io,
      [&]() -> asio::awaitable<void> {
        c.stream.expires_after(options_.timeout);
        if (auto error = co_await c.connect(where)) {
          result = Status(errc::unreachable, options_.endpoints[index] + ": " + error.message());
          co_return;
        }
        http::request<http::string_body> request{http::verb::post, "/v3/watch", 11, body};
        request.set(http::field::host, where.host);
        request.set(http::field::content_type, "application/json");
        request.prepare_payload();
        auto [write_error, written] = co_await http::async_write(c.stream, request, kTuple);
        if (write_error) {
          result =
              Status(errc::unreachable, options_.endpoints[index] + ": " + write_error.message());
          co_return;
        }
        http::response_parser<http::empty_body> parser;
        parser.body_limit(boost::none);
        bool stop = false;
        auto on_chunk = [&](std::uint64_t, std::string_view data, beast::error_code&) {
          lines.append(data);
          if (!stop && !consume()) stop = true;
          return data.size();
        };
        parser.on_chunk_body(on_chunk);
        while (!stop && !parser.is_done()) {
          auto [read_error, read] =
              co_await http::async_read_some(c.stream, c.buffer, parser, kTuple);
          if (read_error) {
            if (result.ok() && !closing) {
              result = Status(errc::unreachable,
                              options_.endpoints[index] + ": " + read_error.message());
            }
            co_return;
          }
          if (!parser.is_header_done()) continue;
          unsigned status = parser.get().result_int();
          if (status != 200) {
            result = Status(
                status >= 500 ? errc::unreachable : errc::rejected,
                options_.endpoints[index] + ": watch answered HTTP " + std::to_string(status));
            co_return;
          }
          // Once it answers, the stream has no deadline (it may be quiet for long):
          // `keep_going` is polled instead.
          c.stream.expires_never();
        }
      },
      [&](std::exception_ptr) {
        poll.cancel();
        c.close();
      });
  {
    std::lock_guard lock(watch_mutex_);
    watch_cancel_ = [&] {
      asio::post(c.io, [&] {
        closing = true;
        c.close();
      });
    };
  }
  // Asks keep_going() now and then, and closes the stream when it says no.
  std::function<void()> arm = [&] {
    poll.expires_after(std::chrono::milliseconds(200));
    poll.async_wait([&](beast::error_code error) {
      if (error) return;
      if (watch_stop_.load() || !keep_going()) {
        closing = true;
        c.close();
        return;
      }
      arm();
    });
  };
  arm();
  if (watch_stop_.load()) {
    closing = true;
    c.close();
  }
  c.io.run();
  {
    std::lock_guard lock(watch_mutex_);
    watch_cancel_ = nullptr;
  }
  // Closed on purpose, whatever it was doing then.
  if (closing && result.code() == errc::unreachable) return {};
  return result;
}

}  // namespace tenure::storage
