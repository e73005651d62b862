#pragma once
// Load for the cluster tests: worker threads, each one sequential client that acquires a random
// key of a small set, holds it briefly, renews it once, releases it, and again. Every reply goes
// through the fencing checker. A worker whose node dies or stalls (a reply that does not come)
// moves to the next node of its list; if it held a key then, its next step is to renew that key
// through the new node, which must succeed while the lease's deadline is ahead (§10: leases
// granted through a node that died stay held until their own deadlines).
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/cluster/fencing.hpp"
#include "tests/e2e/line_client.hpp"

namespace cluster {

struct LoadOptions {
  std::vector<std::string> keys;
  std::int64_t ttl_ms = 10000;  // long enough to outlive a failover
  e2e::Millis max_hold{100};
  e2e::Millis reply_timeout{6000};      // longer than any answer a live node takes
  std::int64_t renew_margin_ms = 1500;  // a carried lease is renewed only this far from its end
};

struct LoadCounters {
  std::atomic<std::uint64_t> acquired{0}, held{0}, released{0}, unavailable{0}, reconnects{0},
      carried_renewed{0};
};

class Load {
 public:
  // `sockets_per_worker[i]`: worker i's nodes, in the order it tries them.
  Load(FencingChecker& checker, LoadOptions options,
       std::vector<std::vector<std::string>> sockets_per_worker);
  ~Load();  // stops
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  void stop();
  const LoadCounters& counters() const { return counters_; }
  // What the workers found against the contract (e.g. a renew refused before the deadline).
  std::vector<std::string> failures() const;
  std::string summary() const;
  // Waits until the workers together acquired `n` more times than when called.
  bool wait_progress(std::uint64_t n, e2e::Millis timeout) const;

 private:
  void run(int worker, std::vector<std::string> sockets);
  void fail(std::string what);

  FencingChecker& checker_;
  LoadOptions options_;
  LoadCounters counters_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> failures_;
  std::vector<std::thread> threads_;
};

}  // namespace cluster
