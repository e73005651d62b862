#include "bench/load/watch_client.hpp"

#include <simdjson.h>

#include <boost/asio/use_awaitable.hpp>
#include <optional>
#include <stdexcept>

#include "bench/load/pipelined_stream.hpp"
#include "bench/load/wall_clock.hpp"
#include "core/json_writer.hpp"

namespace tenure::bench {

namespace asio = boost::asio;

class WatchClient::Stream final : public PipelinedStream {
 public:
  Stream(asio::any_io_executor ex, std::string path)
      : PipelinedStream(std::move(ex)), path_(std::move(path)) {}

  asio::awaitable<void> watch(std::string_view prefix, WatchSink sink) {
    co_await open(path_);
    prefix_ = prefix;
    sink_ = std::move(sink);
    request(std::nullopt);
    std::string status =
        co_await asio::async_initiate<const asio::use_awaitable_t<>&, void(std::string)>(
            [this](auto handler) { reply_.emplace(std::move(handler)); }, asio::use_awaitable);
    if (status != "watching") throw std::runtime_error("watch answered " + status);
  }

 private:
  std::size_t consume(std::string_view data) override {
    return for_each_line(data, [this](std::string_view line) { handle(line); });
  }

  void request(std::optional<std::uint64_t> from_revision) {
    std::string line;
    JsonWriter w(line);
    w.begin_object().field("id", ++last_id_).field("op", "watch").field("prefix", prefix_);
    if (from_revision) w.field("from_revision", *from_revision);
    w.end_object();
    line.push_back('\n');
    send(line);
  }

  void handle(std::string_view line) {
    simdjson::dom::element doc;
    if (parser_.parse(line.data(), line.size()).get(doc)) return close();
    WatchEvent event;
    if (!doc["event"].get(event.type)) {
      if (doc["key"].get(event.key)) event.key = {};
      if (doc["token"].get(event.token)) event.token = 0;
      event.received_ms = wall_now_ms();
      sink_(event);
      // A lagged watch is cancelled; a user resumes it where it stopped (CONTRACT §5), and the
      // replayed events are then as late as the lag made them.
      std::uint64_t resume_from = 0;
      if (event.type == "lagged" && !doc["resume_from"].get(resume_from)) request(resume_from);
      return;
    }
    std::string_view status;
    if (doc["status"].get(status)) status = "missing_status";
    std::string_view error;
    if (!doc["error"].get(error)) status = error;
    if (reply_) {
      complete(*std::exchange(reply_, std::nullopt), std::string(status));
    } else if (status != "watching") {
      close();  // a resume was refused: what is missing shows in the counts
    }
  }

  void fail_all() override {
    if (reply_) complete(*std::exchange(reply_, std::nullopt), std::string("closed"));
  }

  std::string path_;
  std::string prefix_;
  std::uint64_t last_id_ = 0;
  WatchSink sink_;
  std::optional<Waiter<std::string>> reply_;  // the watch request, until it is answered
  simdjson::dom::parser parser_;
};

WatchClient::WatchClient(asio::any_io_executor ex, std::string path)
    : stream_(std::make_unique<Stream>(std::move(ex), std::move(path))) {}

WatchClient::~WatchClient() = default;

asio::awaitable<void> WatchClient::watch(std::string_view prefix, WatchSink sink) {
  co_await stream_->watch(prefix, std::move(sink));
}

void WatchClient::close() { stream_->close(); }

}  // namespace tenure::bench
