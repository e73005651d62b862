#pragma once
// A stand-in for a cluster node whose keys are moving to another (a failover settling): it
// accepts connections on a Unix socket and answers every request `unavailable` (contract §3).
#include <atomic>
#include <string>
#include <thread>

namespace e2e {

class UnavailableNode {
 public:
  explicit UnavailableNode(std::string path);  // listening when it returns
  ~UnavailableNode();
  UnavailableNode(const UnavailableNode&) = delete;
  UnavailableNode& operator=(const UnavailableNode&) = delete;

  const std::string& path() const { return path_; }
  int requests() const { return requests_; }  // answered so far

 private:
  void serve();
  void answer(int connection);

  std::string path_;
  int listener_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace e2e
