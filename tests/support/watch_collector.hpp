#pragma once
// A watch's sink for tests, from any thread: what it was sent, waited for with a timeout.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/watch.hpp"

namespace tenure::test {

class Collector : public WatchSink {
 public:
  void on_watch_events(std::uint64_t, const EventBatch& events) override {
    std::lock_guard lock(mutex_);
    events_.insert(events_.end(), events->begin(), events->end());
    cv_.notify_all();
  }
  void on_watch_compacted(std::uint64_t, Revision oldest) override {
    std::lock_guard lock(mutex_);
    compacted_ = oldest;
    cv_.notify_all();
  }
  void on_watch_failed(std::uint64_t, Revision resume_from, const std::string& message) override {
    std::lock_guard lock(mutex_);
    failed_ = std::make_pair(resume_from, message);
    cv_.notify_all();
  }
  std::optional<std::pair<Revision, std::string>> failed() {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return failed_.has_value(); });
    return failed_;
  }
  std::vector<Event> wait_for(std::size_t n) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return events_.size() >= n; });
    return events_;
  }
  std::optional<Revision> compacted(std::chrono::milliseconds patience = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, patience, [&] { return compacted_.has_value(); });
    return compacted_;
  }
  // The events so far, without waiting.
  std::vector<Event> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Event> events_;
  std::optional<Revision> compacted_;
  std::optional<std::pair<Revision, std::string>> failed_;
};

}  // namespace tenure::test
