#include "bench/load/redis_client.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <deque>
#include <optional>
#include <span>
#include <stdexcept>

#include "bench/load/pipelined_stream.hpp"

namespace tenure::bench {

namespace asio = boost::asio;

namespace {

// The per-key token counters live in one hash, one field per key.
constexpr std::string_view kTokenHash = "tenure-bench:tokens";

constexpr std::string_view kAcquireScript =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
    "return redis.call('HINCRBY', KEYS[2], KEYS[1], 1) end return false";
constexpr std::string_view kRenewScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
constexpr std::string_view kReleaseScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

struct Resp {
  char type = 0;  // '+', '-', ':', '$'; 0: the connection failed
  std::int64_t integer = 0;
  bool nil = false;
  std::string text;
};

// One reply at the front of `data`: its length, or nullopt if it is not all there yet.
// Throws on a reply this client never asks for (arrays) or cannot read.
std::optional<std::size_t> parse_resp(std::string_view data, Resp& out) {
  std::size_t eol = data.find("\r\n");
  if (eol == std::string_view::npos) return std::nullopt;
  out.type = data[0];
  std::string_view line = data.substr(1, eol - 1);
  auto as_int = [&] {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec != std::errc{} || ptr != line.data() + line.size()) {
      throw std::runtime_error("bad RESP integer");
    }
    return v;
  };
  switch (out.type) {
    case '+':
    case '-':
      out.text = line;
      return eol + 2;
    case ':':
      out.integer = as_int();
      return eol + 2;
    case '$': {
      std::int64_t len = as_int();
      if (len < 0) {
        out.nil = true;
        return eol + 2;
      }
      std::size_t end = eol + 2 + static_cast<std::size_t>(len) + 2;
      if (data.size() < end) return std::nullopt;
      out.text = data.substr(eol + 2, static_cast<std::size_t>(len));
      return end;
    }
    default:
      throw std::runtime_error("unexpected RESP reply type");
  }
}

class RedisClient final : public LockClient, private PipelinedStream {
 public:
  RedisClient(const Config& config, asio::any_io_executor ex)
      : PipelinedStream(ex), path_(config.socket) {}

  asio::awaitable<void> connect() override {
    co_await open(path_);
    acquire_sha_ = co_await load(kAcquireScript);
    renew_sha_ = co_await load(kRenewScript);
    release_sha_ = co_await load(kReleaseScript);
  }

  asio::awaitable<OpResult> acquire(const LockArgs& args, Hold& hold) override {
    std::string_view keys[] = {args.key, kTokenHash};
    Resp r = co_await evalsha(acquire_sha_, keys, args.owner, args.ttl_ms);
    if (r.type == ':') {
      hold.token = static_cast<std::uint64_t>(r.integer);
      co_return OpResult{Outcome::acquired, hold.token, {}};
    }
    if (r.type == '$' && r.nil) co_return OpResult{Outcome::held, 0, {}};
    co_return failure(r);
  }

  asio::awaitable<OpResult> renew(const LockArgs& args, Hold&) override {
    std::string_view keys[] = {args.key};
    co_return done(co_await evalsha(renew_sha_, keys, args.owner, args.ttl_ms), Outcome::renewed);
  }

  asio::awaitable<OpResult> release(const LockArgs& args, Hold&) override {
    std::string_view keys[] = {args.key};
    co_return done(co_await evalsha(release_sha_, keys, args.owner, std::nullopt),
                   Outcome::released);
  }

  void close() override { PipelinedStream::close(); }

 private:
  // Scripts answer 1 when they did it, 0 when the lease is not ours (any more).
  static OpResult done(const Resp& r, Outcome as) {
    if (r.type == ':') return {r.integer == 1 ? as : Outcome::not_holder, 0, {}};
    return failure(r);
  }

  static OpResult failure(const Resp& r) {
    if (r.type == 0) return {Outcome::error, 0, "closed"};
    if (r.type == '-') return {Outcome::error, 0, r.text.substr(0, r.text.find(' '))};
    return {Outcome::error, 0, "unexpected_reply"};
  }

  asio::awaitable<std::string> load(std::string_view script) {
    command_.clear();
    append_array(3);
    append_bulk("SCRIPT");
    append_bulk("LOAD");
    append_bulk(script);
    Resp r = co_await call();
    if (r.type != '$' || r.nil) throw std::runtime_error("redis: SCRIPT LOAD failed: " + r.text);
    co_return r.text;
  }

  asio::awaitable<Resp> evalsha(const std::string& sha, std::span<const std::string_view> keys,
                                std::string_view owner, std::optional<std::int64_t> ttl_ms) {
    command_.clear();
    append_array(3 + keys.size() + 1 + (ttl_ms ? 1 : 0));
    append_bulk("EVALSHA");
    append_bulk(sha);
    append_bulk(std::to_string(keys.size()));
    for (std::string_view key : keys) append_bulk(key);
    append_bulk(owner);
    if (ttl_ms) append_bulk(std::to_string(*ttl_ms));
    co_return co_await call();
  }

  void append_array(std::size_t n) { command_ += "*" + std::to_string(n) + "\r\n"; }
  void append_bulk(std::string_view arg) {
    command_ += "$" + std::to_string(arg.size()) + "\r\n";
    command_.append(arg);
    command_ += "\r\n";
  }

  // Sends command_; Redis answers each connection's commands in order.
  asio::awaitable<Resp> call() {
    if (!is_open()) co_return Resp{};
    send(command_);
    co_return co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(Resp)>(
        [this](auto handler) { waiting_.emplace_back(std::move(handler)); }, asio::use_awaitable);
  }

  std::size_t consume(std::string_view data) override {
    std::size_t used = 0;
    try {
      while (used < data.size()) {
        Resp r;
        auto n = parse_resp(data.substr(used), r);
        if (!n) break;
        used += *n;
        if (waiting_.empty()) throw std::runtime_error("reply without a request");
        Waiter<Resp> waiter = std::move(waiting_.front());
        waiting_.pop_front();
        complete(std::move(waiter), std::move(r));
      }
    } catch (const std::runtime_error&) {
      close();
    }
    return used;
  }

  void fail_all() override {
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& waiter : waiting) complete(std::move(waiter), Resp{});
  }

  std::string path_;
  std::string acquire_sha_, renew_sha_, release_sha_;
  std::string command_;
  std::deque<Waiter<Resp>> waiting_;
};

}  // namespace

std::unique_ptr<LockClient> make_redis_client(const Config& config, asio::any_io_executor ex) {
  return std::make_unique<RedisClient>(config, std::move(ex));
}

}  // namespace tenure::bench
