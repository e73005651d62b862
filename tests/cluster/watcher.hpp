#pragma once
// A watch on every key, on a thread of its own, that resumes on the next node by revision when
// its node dies or stalls (a ping that gets no pong). Revisions are +1 per event cluster-wide, so
// a watch on everything must see them consecutive: a gap or a repeat is a failure.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/json.hpp"
#include "tests/e2e/line_client.hpp"

namespace cluster {

struct SeenEvent {
  std::uint64_t revision = 0;
  std::string type;
  std::string key;
  std::uint64_t token = 0;
};

class Watcher {
 public:
  // Watches from the current revision of the first node it reaches, trying `sockets` in order.
  explicit Watcher(std::vector<std::string> sockets,
                   e2e::Millis stall_timeout = std::chrono::milliseconds(4000));
  ~Watcher();  // stops
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  void stop();
  // Waits until the watch is established (returns the revision it started after).
  std::uint64_t wait_started(e2e::Millis timeout = std::chrono::milliseconds(10000));
  // Waits until an event with revision >= r arrived.
  bool wait_revision(std::uint64_t r, e2e::Millis timeout);
  std::uint64_t started_after() const;
  std::vector<SeenEvent> events() const;
  std::vector<std::string> failures() const;
  int resumes() const { return resumes_; }

 private:
  void run();
  void fail(std::string what);

  std::vector<std::string> sockets_;
  e2e::Millis stall_timeout_;
  std::atomic<bool> stop_{false};
  std::atomic<int> resumes_{0};
  mutable std::mutex mutex_;
  std::uint64_t started_after_ = 0;
  bool started_ = false;
  std::uint64_t next_ = 0;  // the revision expected next
  std::vector<SeenEvent> events_;
  std::vector<std::string> failures_;
  std::thread thread_;
};

}  // namespace cluster
