#pragma once
// The io threads of the daemon's io_context, and how many of them serve at a time.
//
// Asio's scheduler hands work to every thread it has: while one thread runs handlers, another
// waits in epoll_wait, and each request of a lone connection wakes both (a futex or an epoll
// interrupt, and a context switch on each side). With one session open there is nobody for a
// second thread to serve meanwhile, so the threads beyond the first park inside a handler of
// their own, where the scheduler counts them busy and neither wakes them nor gives them the
// reactor, until a second session opens (docs/design.md, "Io threads").
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace tenure {

class IoThreads {
 public:
  IoThreads(boost::asio::io_context& io, unsigned count);
  ~IoThreads() { join(); }
  IoThreads(const IoThreads&) = delete;
  IoThreads& operator=(const IoThreads&) = delete;

  // Any thread. From now on `wanted` threads serve (at least one, at most all); the others park
  // at their next handler and come back when wanted again.
  void serve_with(unsigned wanted);
  // Unparks every thread, stops the io_context and joins the threads.
  void join();
  // How many threads serve now (parks still on their way count as serving).
  unsigned serving();

 private:
  // Runs on an io thread, as a handler: parks it while fewer threads are wanted.
  void park();
  // REQUIRES: mutex_ held.
  unsigned unparked() const { return count_ - parked_; }

  boost::asio::io_context& io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  const unsigned count_;
  std::mutex mutex_;
  std::condition_variable wanted_again_;
  unsigned wanted_;
  unsigned parked_ = 0;
  unsigned parks_posted_ = 0;  // park handlers not yet run
  bool joining_ = false;
  std::vector<std::jthread> threads_;
};

}  // namespace tenure
