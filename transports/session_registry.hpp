#pragma once
// The open sessions of a server: how many there are (--max-connections, stats) and, at
// shutdown, the way to drain them and to wait until they are gone.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tenure {

class Session;

class SessionRegistry {
 public:
  void add(const std::shared_ptr<Session>& session);
  void remove(const Session* session);
  std::size_t size() const;
  // Every session stops reading and closes once its requests are answered.
  void drain_all();
  // Every session closes now.
  void abort_all();
  // Blocks until every session is gone or the timeout passes; false on timeout.
  bool wait_empty(std::chrono::milliseconds timeout);

 private:
  std::vector<std::shared_ptr<Session>> open_sessions() const;

  mutable std::mutex mutex_;
  std::condition_variable emptied_;
  std::unordered_map<const Session*, std::weak_ptr<Session>> sessions_;
};

}  // namespace tenure
