#pragma once
// etcd v3 through its HTTP/JSON gateway (POST /v3/..., keys and values base64, int64s as JSON
// strings): what cluster mode needs of etcd without gRPC. Every call is blocking, bounded by the
// timeout, and thread-safe: each call checks out a keep-alive connection of its own from a pool.
// A call goes to the endpoint that answered last and fails over to the next one when it cannot
// connect or gets no answer. A call that changes something is retried on another endpoint only
// if it surely did not reach etcd, or if repeating it is harmless; a transaction that was sent
// and got no answer is errc::uncertain (it may have committed), never repeated.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "storage/errc.hpp"

namespace tenure::storage {

struct EtcdOptions {
  std::vector<std::string> endpoints;       // http://HOST:PORT, at least one
  std::chrono::milliseconds timeout{2000};  // per endpoint tried
};

// "http://a:1,http://b:2" into its endpoints; errc::rejected with a reason if one is not
// http://HOST:PORT.
Status parse_endpoints(std::string_view list, std::vector<std::string>& endpoints);

// The end of the range of every key that starts with `prefix` (etcd's range_end).
std::string prefix_end(std::string_view prefix);

struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;  // 0: the key does not exist
  std::int64_t mod_revision = 0;
  std::int64_t lease = 0;
};

struct RangeRequest {
  std::string key;
  std::string range_end;      // empty: `key` alone
  std::int64_t limit = 0;     // 0: no limit
  bool descend = false;       // keys in descending order
  std::int64_t revision = 0;  // read as of this etcd revision (0: the latest)
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  bool more = false;
  std::int64_t revision = 0;  // etcd's revision when it was read
};

// One transaction: every compare must hold for the success ops to run, else the failure ops.
class EtcdTxn {
 public:
  // With range_end, every key in [key, range_end) that exists must have been created at
  // `revision` (and at least one must exist): etcd's range compare.
  void compare_create_revision(std::string_view key, std::int64_t revision,
                               std::string_view range_end = {});
  void compare_mod_revision(std::string_view key, std::int64_t revision);
  void put(std::string_view key, std::string_view value, std::int64_t lease = 0);
  void delete_key(std::string_view key);
  void delete_range(std::string_view key, std::string_view range_end);
  // A read among the success ops (a transaction of reads only is one consistent snapshot).
  void range(std::string_view key, std::string_view range_end, std::int64_t limit,
             bool descend = false);
  // Ops run when a compare fails: each range's answer is in EtcdTxnResult::ranges, in order.
  void on_failure_range(std::string_view key, std::string_view range_end = {});

  std::size_t success_ops() const { return success_ops_; }
  std::size_t bytes() const { return compares_.size() + success_.size() + failure_.size(); }
  bool empty() const { return success_ops_ == 0; }
  // Only reads: harmless to send again.
  bool read_only() const { return writes_ == 0; }
  std::string body() const;
  void clear();

 private:
  void compare(std::string_view key, std::string_view range_end, std::string_view target,
               std::int64_t revision);
  std::string compares_, success_, failure_;
  std::size_t success_ops_ = 0;
  std::size_t writes_ = 0;
};

struct EtcdTxnResult {
  bool succeeded = false;
  std::int64_t revision = 0;        // etcd's revision after the transaction
  std::vector<RangeResult> ranges;  // the answers of the ranges that ran, in order
};

struct WatchEvent {
  bool deleted = false;
  KeyValue kv;
};

class EtcdClient {
 public:
  explicit EtcdClient(EtcdOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  Status range(const RangeRequest& request, RangeResult& result) const;
  Status get(std::string_view key, KeyValue& kv) const;  // create_revision 0: absent
  Status put(std::string_view key, std::string_view value, std::int64_t lease = 0);
  Status delete_range(std::string_view key, std::string_view range_end = {});
  Status txn(const EtcdTxn& txn, EtcdTxnResult& result);
  Status lease_grant(std::int64_t ttl_seconds, std::int64_t& id);
  // ttl: the lease's remaining seconds; 0 when it is gone (expired or revoked).
  Status lease_keepalive(std::int64_t id, std::int64_t& ttl);
  Status lease_revoke(std::int64_t id);

  // Watches [key, range_end) from `start_revision` and calls `on_events` with each response's
  // events (in revision order) on the calling thread, until stop_watch() or an error; a broken
  // stream is reopened on the next endpoint from the revision after the last one delivered.
  // `keep_going` is asked every few hundred milliseconds; false ends the watch (returns ok).
  // Only one watch runs at a time per client.
  Status watch(std::string_view key, std::string_view range_end, std::int64_t start_revision,
               const std::function<void(std::vector<WatchEvent>& events)>& on_events,
               const std::function<bool()>& keep_going);
  // Thread-safe: ends a watch() under way (or the next one) soon.
  void stop_watch();

  const std::vector<std::string>& endpoints() const { return options_.endpoints; }
  // The endpoint calls go to first (the last that answered), and a way to change it.
  std::string current_endpoint() const;
  void prefer(std::string_view endpoint);

 private:
  struct Connection;
  struct Endpoint {
    std::string host;
    std::string port;
  };
  // POST `body` to `path`; `retry_sent`: the call may be repeated on another endpoint even if it
  // was sent (harmless to repeat).
  Status post(std::string_view path, const std::string& body, bool retry_sent,
              std::string& response) const;
  std::unique_ptr<Connection> checkout(std::size_t endpoint) const;
  void checkin(std::unique_ptr<Connection> connection) const;
  Status watch_once(std::size_t endpoint, const std::string& body, std::int64_t& next_revision,
                    const std::function<void(std::vector<WatchEvent>& events)>& on_events,
                    const std::function<bool()>& keep_going, bool& delivered);

  EtcdOptions options_;
  std::vector<Endpoint> parsed_;
  mutable std::atomic<std::size_t> preferred_{0};
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Connection>> idle_;
  std::atomic<bool> watch_stop_{false};
  std::mutex watch_mutex_;
  std::function<void()> watch_cancel_;  // closes the watch's socket from another thread
};

}  // namespace tenure::storage
