#include "bench/load/tenure_client.hpp"

#include <simdjson.h>

#include <atomic>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <string_view>

#include "bench/load/pipelined_stream.hpp"
#include "bench/load/wall_clock.hpp"
#include "core/json_writer.hpp"

namespace tenure::bench {

namespace asio = boost::asio;

namespace {

struct Reply {
  std::string status;  // empty: the connection failed
  std::string error;
  std::uint64_t token = 0;
  bool fresh = false;
  std::int64_t expires_at_ms = 0;
};

// --socket may name the nodes of a cluster, comma-separated: connections take them in turn.
std::string next_socket(std::string_view list) {
  static std::atomic<std::size_t> next{0};
  std::size_t count = 1;
  for (char c : list) count += c == ',';
  std::size_t skip = next++ % count;
  for (; skip > 0; --skip) list.remove_prefix(list.find(',') + 1);
  return std::string(list.substr(0, list.find(',')));
}

class TenureClient final : public LockClient, private PipelinedStream {
 public:
  TenureClient(const Config& config, asio::any_io_executor ex)
      : PipelinedStream(ex), path_(next_socket(config.socket)) {}

  asio::awaitable<void> connect() override { co_await open(path_); }

  asio::awaitable<OpResult> acquire(const LockArgs& args, Hold& hold) override {
    Reply r = co_await call("acquire", args, [&](JsonWriter& w) {
      w.field("ttl_ms", args.ttl_ms);
      if (args.wait_ms > 0) w.field("wait_ms", args.wait_ms);
    });
    if (r.status == "acquired") {
      // Every cycle uses a new owner, so an acquire that is not fresh means a server fault.
      if (!r.fresh) co_return OpResult{Outcome::error, 0, "acquired_not_fresh"};
      hold.token = r.token;
      hold.expires_at_ms = r.expires_at_ms;
      co_return OpResult{Outcome::acquired, r.token, {}};
    }
    co_return outcome(r, "held", Outcome::held);
  }

  asio::awaitable<OpResult> renew(const LockArgs& args, Hold& hold) override {
    Reply r = co_await call("renew", args, [&](JsonWriter& w) {
      w.field("ttl_ms", args.ttl_ms).field("token", hold.token);
    });
    co_return outcome(r, "renewed", Outcome::renewed);
  }

  asio::awaitable<OpResult> release(const LockArgs& args, Hold& hold) override {
    Reply r = co_await call("release", args, [&](JsonWriter& w) { w.field("token", hold.token); });
    co_return outcome(r, "released", Outcome::released);
  }

  asio::awaitable<OpResult> ping() override {
    Reply r = co_await request("ping", [](JsonWriter&) {});
    co_return outcome(r, "pong", Outcome::pong);
  }

  void close() override { PipelinedStream::close(); }
  void on_lost(LostSink sink) override { lost_ = std::move(sink); }
  bool closed_by_server() const override { return peer_closed(); }
  std::uint64_t undelivered() const override { return undelivered_; }

 private:
  static OpResult outcome(const Reply& r, std::string_view expected, Outcome as) {
    if (r.status == expected) return {as, r.token, {}};
    if (r.status == "not_holder") return {Outcome::not_holder, 0, {}};
    if (r.status == "error") return {Outcome::error, 0, r.error};
    return {Outcome::error, 0, r.status.empty() ? "closed" : "unexpected_" + r.status};
  }

  template <typename Extra>
  asio::awaitable<Reply> call(std::string_view op, const LockArgs& args, Extra extra) {
    co_return co_await request(op, [&](JsonWriter& w) {
      w.field("key", args.key).field("owner", args.owner);
      extra(w);
    });
  }

  // Sends {"id", "op", fields...} and waits for the reply with that id.
  template <typename Fields>
  asio::awaitable<Reply> request(std::string_view op, Fields fields) {
    if (!is_open()) co_return Reply{};
    std::uint64_t id = ++last_id_;
    line_.clear();
    JsonWriter w(line_);
    w.begin_object().field("id", id).field("op", op);
    fields(w);
    w.end_object();
    line_.push_back('\n');
    send(line_);
    co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(Reply)>(
        [this](auto handler) { waiting_.emplace_back(std::move(handler)); }, asio::use_awaitable);
  }

  std::size_t consume(std::string_view data) override {
    return for_each_line(data, [this](std::string_view line) { handle(line); });
  }

  void handle(std::string_view line) {
    simdjson::dom::element doc;
    if (parser_.parse(line.data(), line.size()).get(doc)) return close();
    std::string_view text;
    if (!doc["event"].get(text)) {
      std::uint64_t token = 0;
      if (text == "lost" && lost_ && !doc["key"].get(text) && !doc["token"].get(token)) {
        lost_(text, token, wall_now_ms());
      } else if (text == "closing" && !doc["undelivered"].get(token)) {
        undelivered_ += token;
      }
      return;
    }
    std::uint64_t id = 0;
    if (doc["id"].get(id)) return close();  // every request has an id: its reply must too
    if (id < first_id_ || id - first_id_ >= waiting_.size() || !waiting_[id - first_id_]) {
      return close();  // a reply to no request, or a second one
    }
    Reply r;
    if (!doc["status"].get(text)) r.status = text;
    if (r.status.empty()) r.status = "missing_status";
    if (!doc["error"].get(text)) r.error = text;
    if (doc["token"].get(r.token)) r.token = 0;  // absent or null
    if (doc["fresh"].get(r.fresh)) r.fresh = false;
    if (lost_ && !doc["expires_at"].get(text)) r.expires_at_ms = parse_rfc3339_ms(text);
    Waiter<Reply> waiter = std::move(waiting_[id - first_id_]);
    while (!waiting_.empty() && !waiting_.front()) {
      waiting_.pop_front();
      ++first_id_;
    }
    complete(std::move(waiter), std::move(r));
  }

  void fail_all() override {
    auto waiting = std::move(waiting_);
    waiting_.clear();
    first_id_ = last_id_ + 1;
    for (auto& waiter : waiting) {
      if (waiter) complete(std::move(waiter), Reply{});
    }
  }

  std::string path_;
  std::uint64_t last_id_ = 0;
  std::string line_;
  // The callers of requests first_id_, first_id_ + 1, ... (ids are sequential); answered ones
  // stay as empty handlers until every earlier one is answered too.
  std::deque<Waiter<Reply>> waiting_;
  std::uint64_t first_id_ = 1;
  simdjson::dom::parser parser_;
  LostSink lost_;
  std::uint64_t undelivered_ = 0;  // messages the server's `closing` notice said it dropped
};

}  // namespace

std::unique_ptr<LockClient> make_tenure_client(const Config& config, asio::any_io_executor ex) {
  return std::make_unique<TenureClient>(config, std::move(ex));
}

}  // namespace tenure::bench
