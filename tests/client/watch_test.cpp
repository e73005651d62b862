// tenure::Watch: typed events, replay, resume across a daemon restart.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "tests/client/client_common.hpp"

using namespace client_test;
using tenure::client_errc;

TEST_CASE("a watch streams typed events in revision order", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto w = c.watch({.prefix = "pr/"});
  REQUIRE(w);
  auto a = c.acquire("pr/1", {.ttl = 30s});
  REQUIRE(a);
  REQUIRE(c.acquire("other", {.ttl = 30s}));
  REQUIRE(c.release("pr/1"));
  auto first = w->next(10s);
  REQUIRE(first);
  CHECK(first->type == "acquired");
  CHECK(first->revision == a->revision);
  auto second = w->next(10s);
  REQUIRE(second);
  CHECK(second->type == "released");
  CHECK(second->key == "pr/1");
  auto none = w->next(100ms);
  REQUIRE_FALSE(none);
  CHECK(none.error().is(client_errc::timeout));
  w->close();
  auto closed = w->next(10s);
  REQUIRE_FALSE(closed);
  CHECK(closed.error().is(client_errc::closed));
}

TEST_CASE("a watch replays from a revision", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto a = c.acquire("k", {.ttl = 30s});
  REQUIRE(a);
  REQUIRE(c.release("k"));
  auto w = c.watch({.key = "k", .from_revision = a->revision});
  REQUIRE(w);
  auto first = w->next(10s);
  auto second = w->next(10s);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->type == "acquired");
  CHECK(second->type == "released");
  CHECK(w->next_revision() == second->revision + 1);
}

TEST_CASE("a watch resumes across a daemon restart without gap or repeat", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto w = c.watch({.prefix = "pr/"});
  REQUIRE(w);
  REQUIRE(c.acquire("pr/1", {.ttl = 30s}));
  auto first = w->next(10s);
  REQUIRE(first);
  REQUIRE(d.terminate().exited);
  d.start();
  auto other = connect(d);
  for (const char* key : {"pr/2", "pr/3", "pr/4"}) REQUIRE(other.acquire(key, {.ttl = 30s}));
  for (const char* key : {"pr/2", "pr/3", "pr/4"}) {
    auto e = w->next(20s);
    REQUIRE(e);
    CHECK(e->key == key);
    CHECK(e->type == "acquired");
  }
  auto none = w->next(200ms);
  CHECK_FALSE(none);
}

TEST_CASE("a watch resuming from a compacted revision ends with compacted", "[client]") {
  e2e::Daemon d({"--events-keep", "1", "--sync", "none"});
  auto c = connect(d);
  for (int i = 0; i < 2100; ++i) {  // past one trimming step (4096 events)
    REQUIRE(c.acquire("k", {.ttl = 30s}));
    REQUIRE(c.release("k"));
  }
  auto w = c.watch({.from_revision = 1});
  REQUIRE(w);
  auto e = w->next(10s);
  REQUIRE_FALSE(e);
  CHECK(e.error().is(client_errc::compacted));
  CHECK(e.error().message.find("from revision 1:") != std::string::npos);
  auto again = w->next(10ms);
  REQUIRE_FALSE(again);
  CHECK(again.error().is(client_errc::compacted));  // it stays ended
}

TEST_CASE("a watch refused for too many watches is refused at once", "[client]") {
  e2e::Daemon d({"--max-watches-per-connection", "1"});
  auto c = connect(d);  // its timeout: 10 s
  auto first = c.watch({.prefix = "a/"});
  REQUIRE(first);
  auto since = std::chrono::steady_clock::now();
  auto second = c.watch({.prefix = "b/"});
  REQUIRE_FALSE(second);
  CHECK(second.error().is(client_errc::too_many_requests));
  CHECK(std::chrono::steady_clock::now() - since < 5s);  // not tried again until the timeout
}

TEST_CASE("a watch gives up resuming after resume_for without an endpoint", "[client]") {
  e2e::Daemon d;
  auto c = connect(d);
  auto w = c.watch({.prefix = "pr/", .resume_for = 300ms});
  REQUIRE(w);
  REQUIRE(c.acquire("pr/1", {.ttl = 30s}));
  REQUIRE(w->next(10s));
  REQUIRE(d.terminate().exited);
  auto e = w->next(10s);
  REQUIRE_FALSE(e);
  CHECK(e.error().is(client_errc::cannot_connect));
  CHECK(w->next_revision() == 2);
}

namespace {

// A stand-in for tenured on a Unix socket, for what the real one does only when its disk fails:
// it answers each `watch` with the next of `scripts` (the reply's id filled in), and every
// other request with an empty ok. The requests it got are kept, in order.
class FakeDaemon {
 public:
  explicit FakeDaemon(std::vector<std::function<std::string(std::int64_t id)>> scripts)
      : path_(dir_.path() + "/fake.sock"), scripts_(std::move(scripts)) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener_, 4) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeDaemon() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    if (conn_ >= 0) ::shutdown(conn_, SHUT_RDWR);
    thread_.join();
  }
  const std::string& path() const { return path_; }
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    conn_ = ::accept(listener_, nullptr, nullptr);
    if (conn_ < 0) return;
    std::string buffer;
    char chunk[4096];
    std::size_t watches = 0;
    for (;;) {
      ssize_t n = ::read(conn_, chunk, sizeof chunk);
      if (n <= 0) break;
      buffer.append(chunk, static_cast<std::size_t>(n));
      for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n')) {
        std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        {
          std::lock_guard lock(mutex_);
          requests_.push_back(line);
        }
        auto at = line.find("\"id\":");
        std::int64_t id = at == std::string::npos ? 0 : std::atoll(line.c_str() + at + 5);
        std::string out =
            line.find("\"op\":\"watch\"") != std::string::npos && watches < scripts_.size()
                ? scripts_[watches++](id)
                : "{\"id\":" + std::to_string(id) + ",\"status\":\"ok\"}\n";
        if (::send(conn_, out.data(), out.size(), MSG_NOSIGNAL) < 0) return;
      }
    }
  }

  e2e::TempDir dir_;
  std::string path_;
  std::vector<std::function<std::string(std::int64_t)>> scripts_;
  int listener_ = -1;
  int conn_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> requests_;
};

std::string watching(std::int64_t id, int watch_id, int revision) {
  return "{\"id\":" + std::to_string(id) +
         ",\"status\":\"watching\",\"watch_id\":" + std::to_string(watch_id) +
         ",\"revision\":" + std::to_string(revision) + "}\n";
}

std::string replay_failed(int watch_id, int resume_from) {
  return "{\"event\":\"error\",\"watch_id\":" + std::to_string(watch_id) +
         ",\"error\":\"unavailable\",\"message\":\"cannot read the ledger: Corruption\","
         "\"resume_from\":" +
         std::to_string(resume_from) + "}\n";
}

std::string acquired_event(int watch_id, int revision) {
  return "{\"event\":\"acquired\",\"watch_id\":" + std::to_string(watch_id) +
         ",\"revision\":" + std::to_string(revision) +
         ",\"key\":\"k\",\"owner\":\"o\",\"token\":1,\"at\":\"2026-12-07T00:00:00.000Z\","
         "\"expires_at\":null}\n";
}

}  // namespace

TEST_CASE("a watch whose replay the server could not read resumes from where it stopped",
          "[client]") {
  FakeDaemon fake({[](std::int64_t id) { return watching(id, 1, 20) + replay_failed(1, 11); },
                   [](std::int64_t id) { return watching(id, 2, 20) + acquired_event(2, 11); }});
  auto c = tenure::Client::connect({.socket = fake.path(), .timeout = 10s});
  REQUIRE(c);
  auto w = c->watch({.from_revision = 5});
  REQUIRE(w);
  auto event = w->next(10s);
  INFO((event ? "" : event.error().message));
  REQUIRE(event);
  CHECK(event->revision == 11);
  auto requests = fake.requests();
  REQUIRE(requests.size() >= 2);
  CHECK_THAT(requests[1], Catch::Contains("\"from_revision\":11"));
}

TEST_CASE("a watch whose replays keep failing ends unavailable after resume_for", "[client]") {
  auto failing = [](std::int64_t id) { return watching(id, 1, 20) + replay_failed(1, 11); };
  FakeDaemon fake(std::vector<std::function<std::string(std::int64_t)>>(100, failing));
  auto c = tenure::Client::connect({.socket = fake.path(), .timeout = 10s});
  REQUIRE(c);
  auto w = c->watch({.from_revision = 5, .resume_for = 300ms});
  REQUIRE(w);
  auto ended = w->next(10s);
  REQUIRE_FALSE(ended);
  CHECK(ended.error().is(client_errc::unavailable));
  CHECK_THAT(ended.error().message, Catch::Contains("cannot read the ledger: Corruption"));
}
