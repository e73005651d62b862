#include "apps/tenured/io_threads.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <string>

#include "core/thread_name.hpp"

namespace tenure {

IoThreads::IoThreads(boost::asio::io_context& io, unsigned count)
    : io_(io), work_(io.get_executor()), count_(std::max(count, 1U)), wanted_(count_) {
  for (unsigned i = 0; i < count_; ++i) {
    threads_.emplace_back([&io, i] {
      name_this_thread("io-" + std::to_string(i));
      io.run();
    });
  }
}

void IoThreads::serve_with(unsigned wanted) {
  std::lock_guard lock(mutex_);
  if (joining_) return;
  wanted_ = std::clamp(wanted, 1U, count_);
  if (unparked() < wanted_) {
    wanted_again_.notify_all();
    return;
  }
  // Parks already on their way count: a burst of calls posts no more than are needed.
  for (; unparked() > wanted_ + parks_posted_; ++parks_posted_) {
    boost::asio::post(io_, [this] { park(); });
  }
}

void IoThreads::park() {
  std::unique_lock lock(mutex_);
  --parks_posted_;
  if (joining_ || unparked() <= wanted_) return;
  ++parked_;
  wanted_again_.wait(lock, [&] { return joining_ || unparked() < wanted_; });
  --parked_;
}

void IoThreads::join() {
  {
    std::lock_guard lock(mutex_);
    joining_ = true;
    wanted_again_.notify_all();
  }
  work_.reset();
  io_.stop();
  threads_.clear();
}

unsigned IoThreads::serving() {
  std::lock_guard lock(mutex_);
  return unparked();
}

}  // namespace tenure
