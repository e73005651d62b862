#include "tests/cluster/watcher.hpp"

#include "tests/e2e/e2e.hpp"

namespace cluster {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

Watcher::Watcher(std::vector<std::string> sockets, e2e::Millis stall_timeout)
    : sockets_(std::move(sockets)), stall_timeout_(stall_timeout), thread_([this] { run(); }) {}

Watcher::~Watcher() { stop(); }

void Watcher::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watcher::fail(std::string what) {
  std::lock_guard lock(mutex_);
  failures_.push_back(std::move(what));
}

std::uint64_t Watcher::wait_started(e2e::Millis timeout) {
  bool ok = e2e::wait_until(
      [&] {
        std::lock_guard lock(mutex_);
        return started_;
      },
      timeout);
  if (!ok) throw std::runtime_error("the watch did not start on any node");
  std::lock_guard lock(mutex_);
  return started_after_;
}

bool Watcher::wait_revision(std::uint64_t r, e2e::Millis timeout) {
  return e2e::wait_until(
      [&] {
        std::lock_guard lock(mutex_);
        return next_ > r;
      },
      timeout);
}

std::uint64_t Watcher::started_after() const {
  std::lock_guard lock(mutex_);
  return started_after_;
}

std::vector<SeenEvent> Watcher::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::vector<std::string> Watcher::failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

void Watcher::run() {
  std::size_t at = 0;
  while (!stop_) {
    auto conn = e2e::LineClient::try_connect(sockets_[at]);
    if (!conn) {
      at = (at + 1) % sockets_.size();
      std::this_thread::sleep_for(50ms);
      continue;
    }
    try {
      std::uint64_t from;
      {
        std::lock_guard lock(mutex_);
        from = next_;
      }
      std::string body = "\"op\":\"watch\"";
      if (from) body += ",\"from_revision\":" + std::to_string(from);
      e2e::Json r = conn->call(body, stall_timeout_);
      if (r["status"] != "watching") {
        // Not served now (e.g. unavailable during a failover): try again, elsewhere.
        throw std::runtime_error("watch refused: " + r.source());
      }
      {
        std::lock_guard lock(mutex_);
        if (!started_) {
          started_ = true;
          started_after_ = r["revision"].u64();
          next_ = started_after_ + 1;
        }
      }
      if (from) ++resumes_;
      std::int64_t ping = 0;  // a ping's id while one is out
      auto ping_sent = Clock::now();
      while (!stop_) {
        auto e = conn->next_event(100ms);
        if (!e) {
          if (conn->peer_closed()) throw std::runtime_error("closed");
          // A stalled node sends nothing: a ping without a pong tells.
          if (ping && conn->has_reply(ping)) {
            conn->reply(ping);
            ping = 0;
          }
          if (!ping && Clock::now() - ping_sent > 500ms) {
            ping = conn->send("\"op\":\"ping\"");
            ping_sent = Clock::now();
          }
          if (ping && Clock::now() - ping_sent > stall_timeout_) {
            throw std::runtime_error("no pong");
          }
          continue;
        }
        std::string type = (*e)["event"].str();
        if (type == "lagged") throw std::runtime_error("lagged");  // resume from next_
        if (type == "compacted") {
          fail("watch compacted at " + e->source());
          return;
        }
        std::uint64_t revision = (*e)["revision"].u64();
        std::lock_guard lock(mutex_);
        if (revision != next_) {
          failures_.push_back("watch expected revision " + std::to_string(next_) + ", got " +
                              e->source() + " (after " + std::to_string(resumes_) + " resumes)");
        }
        if (revision >= next_) next_ = revision + 1;
        events_.push_back({revision, type, (*e)["key"].str(), (*e)["token"].u64()});
      }
    } catch (const std::runtime_error&) {
      at = (at + 1) % sockets_.size();
    }
  }
}

}  // namespace cluster
