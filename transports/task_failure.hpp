#pragma once
// The completion of a co_spawn'd task that nobody awaits. An exception escaping such a task is a
// bug: asio::detached would drop it without a word, so it is logged, naming the task. The task's
// objects are then released as usual (a session whose loop failed closes).
#include <spdlog/spdlog.h>

#include <exception>

namespace tenure {

class LogTaskFailure {
 public:
  explicit LogTaskFailure(const char* task) : task_(task) {}

  void operator()(std::exception_ptr failure) const {
    if (!failure) return;
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      spdlog::error("{} failed: {}", task_, e.what());
    } catch (...) {
      spdlog::error("{} failed with an exception that is not a std::exception", task_);
    }
  }

 private:
  const char* task_;
};

}  // namespace tenure
