#pragma once
// A watch subscriber on tenured's Unix socket (the `watch` op, CONTRACT §3 and §5): a client
// that only listens, hands each event to a sink as it arrives, and resumes a lagged watch.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tenure::bench {

struct WatchEvent {
  std::string_view type;  // expired, acquired, ..., or lagged (then key is empty)
  std::string_view key;
  std::uint64_t token = 0;
  std::int64_t received_ms = 0;  // wall clock, when its line was read
};

using WatchSink = std::function<void(const WatchEvent&)>;

class WatchClient {
 public:
  WatchClient(boost::asio::any_io_executor ex, std::string path);
  ~WatchClient();
  // Connects and watches every key starting with `prefix`; throws if that fails or is refused.
  boost::asio::awaitable<void> watch(std::string_view prefix, WatchSink sink);
  void close();

 private:
  class Stream;
  std::unique_ptr<Stream> stream_;
};

}  // namespace tenure::bench
