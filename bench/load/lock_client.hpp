#pragma once
// The fenced lock as each target implements it, behind one interface so that the workload,
// timing and checks are the same code for every system. A LockClient is one client
// connection's worth of concurrency: tenure and redis multiplex all of its cycles on one
// pipelined socket; etcd (HTTP/1.1, one request at a time per connection) keeps a small pool.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "bench/load/config.hpp"

namespace tenure::bench {

enum class Outcome {
  acquired,  // a fresh tenure (token is set)
  held,      // someone else holds the key (or a queued acquire timed out)
  renewed,
  released,
  not_holder,  // renew/release of a lease we no longer hold (it expired)
  pong,        // the answer to ping
  error,       // error_kind says which
};

// What one held lease needs to be renewed and released.
struct Hold {
  std::uint64_t token = 0;
  std::int64_t lease_id = 0;       // etcd's lease
  std::int64_t expires_at_ms = 0;  // tenure: the deadline the server reported (wall clock)
};

struct LockArgs {
  std::string_view key;
  std::string_view owner;
  std::int64_t ttl_ms = 0;
  std::int64_t wait_ms = 0;  // > 0: queue on the server (tenure only)
};

struct OpResult {
  Outcome outcome = Outcome::error;
  std::uint64_t token = 0;
  std::string error_kind;  // for Outcome::error: the server's code or the client's failure
};

// Told of a tenure `lost` event: the key and token, and when it arrived (wall clock, ms).
using LostSink =
    std::function<void(std::string_view key, std::uint64_t token, std::int64_t received_ms)>;

class LockClient {
 public:
  virtual ~LockClient() = default;
  // Connects and prepares (redis: loads the scripts); throws on failure.
  virtual boost::asio::awaitable<void> connect() = 0;
  virtual boost::asio::awaitable<OpResult> acquire(const LockArgs& args, Hold& hold) = 0;
  virtual boost::asio::awaitable<OpResult> renew(const LockArgs& args, Hold& hold) = 0;
  virtual boost::asio::awaitable<OpResult> release(const LockArgs& args, Hold& hold) = 0;
  // A round trip that changes nothing (tenure: `ping`); error "unsupported" elsewhere.
  virtual boost::asio::awaitable<OpResult> ping() {
    co_return OpResult{Outcome::error, 0, "unsupported"};
  }
  // A cycle ends without the lock: frees what acquire set aside (etcd: its lease).
  virtual boost::asio::awaitable<void> abandon(Hold&) { co_return; }
  // Fails every call in flight (error "closed") and refuses new ones.
  virtual void close() = 0;
  // Server-pushed lease losses, where the target has them (tenure).
  virtual void on_lost(LostSink) {}
  // Whether the server closed the connection (rather than this client), and how many messages
  // the server said it dropped when it did (tenure's `closing` notice). Both count as errors.
  virtual bool closed_by_server() const { return false; }
  virtual std::uint64_t undelivered() const { return 0; }
};

std::unique_ptr<LockClient> make_client(const Config& config, boost::asio::any_io_executor ex);

}  // namespace tenure::bench
