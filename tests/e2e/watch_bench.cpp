// Measurements of watches for the notes, not tests: hidden from the default run. Run with
//   build/tests/e2e/tenure_e2e "[bench]" --durations yes
// and read the lines starting with "bench:".
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <thread>

#include "tests/e2e/e2e.hpp"
#include "tests/e2e/ws_client.hpp"

using namespace e2e;

namespace {

// Sends the requests pipelined, `window` at a time, and waits for every reply.
void pipeline(LineClient& c, const std::vector<std::string>& bodies, std::size_t window = 2000) {
  static std::int64_t next_id = 1'000'000;
  for (std::size_t start = 0; start < bodies.size(); start += window) {
    std::string bytes;
    std::vector<std::int64_t> ids;
    for (std::size_t i = start; i < std::min(bodies.size(), start + window); ++i) {
      ids.push_back(next_id++);
      bytes += "{\"id\":" + std::to_string(ids.back()) + "," + bodies[i] + "}\n";
    }
    if (!c.send_bytes(bytes, 120000ms)) throw std::runtime_error("the server closed the socket");
    for (std::int64_t id : ids) c.reply(id, 120000ms);
  }
}

// User + system CPU time of a process so far, from /proc.
double cpu_seconds(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string percentiles(std::vector<std::int64_t> v) {
  if (v.empty()) return "no samples";
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
  };
  return "p50 " + std::to_string(at(0.5)) + " ms, p99 " + std::to_string(at(0.99)) + " ms, max " +
         std::to_string(v.back()) + " ms (" + std::to_string(v.size()) + " samples)";
}

}  // namespace

TEST_CASE("expiry events: 100k leases expiring over ten seconds", "[.][bench]") {
  constexpr int kLeases = 100'000;
  constexpr std::int64_t kSpreadMs = 10'000;
  Daemon d(web_args());
  WsClient watcher(d.web_port());
  REQUIRE(watcher.call("\"op\":\"watch\",\"prefix\":\"exp/\"")["status"] == "watching");
  std::vector<std::int64_t> arrival_late;  // arrival at the watcher - expires_at
  std::vector<std::int64_t> timer_late;    // the event's `at` - expires_at
  std::thread watching([&] {
    while (static_cast<int>(timer_late.size()) < kLeases) {
      auto e = watcher.next_event(60000ms);
      if (!e) break;
      if (e->event["event"] != "expired") continue;
      std::int64_t deadline = *time_ms(e->event["expires_at"]);
      arrival_late.push_back(e->arrived_ms - deadline);
      timer_late.push_back(*time_ms(e->event["at"]) - deadline);
    }
  });
  // Every lease is live before the first deadline; the deadlines are spread evenly over 10 s.
  auto c = d.connect();
  std::int64_t first_deadline = wall_now_ms() + 30'000;
  std::vector<std::string> acquires;
  for (int i = 0; i < kLeases; ++i) {
    std::int64_t deadline = first_deadline + kSpreadMs * i / kLeases;
    acquires.push_back(acquire_req("exp/" + std::to_string(i), "o",
                                   "\"ttl_ms\":" + std::to_string(deadline - wall_now_ms())));
  }
  pipeline(c, acquires);
  std::int64_t setup_left = first_deadline - wall_now_ms();
  INFO("setup left " << setup_left << " ms before the first deadline");
  REQUIRE(setup_left > 0);
  REQUIRE(c.call("\"op\":\"stats\"")["live_leases"] == kLeases);
  watching.join();
  std::cout << "bench: expiry, " << kLeases << " leases over " << kSpreadMs
            << " ms, event at - expires_at: " << percentiles(timer_late) << "\n"
            << "bench: expiry, arrival at a WebSocket watcher - expires_at: "
            << percentiles(arrival_late) << std::endl;
  CHECK(static_cast<int>(timer_late.size()) == kLeases);
}

TEST_CASE("fan-out: events delivered to 100 WebSocket subscribers", "[.][bench]") {
  constexpr int kSubscribers = 100;
  constexpr int kRounds = 5;
  constexpr int kPairs = 2'000;  // per round, two events each: a burst under every queue bound
  constexpr std::size_t kEvents = 2 * kPairs;
  constexpr int kReaders = 2;
  Daemon d(web_args({"--sync", "none"}));
  std::vector<std::unique_ptr<WsClient>> subscribers;
  for (int i = 0; i < kSubscribers; ++i) {
    subscribers.push_back(std::make_unique<WsClient>(d.web_port()));
    REQUIRE(subscribers.back()->call("\"op\":\"watch\",\"prefix\":\"fan/\"")["status"] ==
            "watching");
  }
  std::vector<std::string> churn;
  for (int i = 0; i < kPairs; ++i) {
    std::string key = "fan/" + std::to_string(i % 100);
    churn.push_back(acquire_req(key, "o", "\"ttl_ms\":60000"));
    churn.push_back(release_req(key, "o"));
  }
  auto c = d.connect();
  double server_cpu_before = cpu_seconds(d.pid());
  auto started = std::chrono::steady_clock::now();
  for (int round = 1; round <= kRounds; ++round) {
    std::vector<std::thread> readers;
    std::vector<char> complete(kReaders, 0);
    for (int r = 0; r < kReaders; ++r) {
      readers.emplace_back([&, r] {
        bool all = false;
        auto deadline = std::chrono::steady_clock::now() + 60s;
        while (!all && std::chrono::steady_clock::now() < deadline) {
          all = true;
          for (int i = r; i < kSubscribers; i += kReaders) {
            all &= subscribers[i]->wait_events(kEvents * round, 1ms);
          }
        }
        complete[r] = all;
      });
    }
    pipeline(c, churn);
    for (auto& t : readers) t.join();
    for (char ok : complete) REQUIRE(ok);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  double server_cpu = cpu_seconds(d.pid()) - server_cpu_before;
  std::size_t deliveries = kEvents * kRounds * kSubscribers;
  std::cout << "bench: fan-out, " << kRounds << " bursts of " << kEvents << " events to "
            << kSubscribers << " subscribers: " << deliveries << " deliveries in " << seconds
            << " s, " << static_cast<std::uint64_t>(deliveries / seconds)
            << " events/s delivered; tenured used " << server_cpu << " s of CPU ("
            << server_cpu / static_cast<double>(deliveries) * 1e6 << " us per delivery)"
            << std::endl;
  CHECK(c.call("\"op\":\"stats\"")["watchers"] == kSubscribers);  // nobody lagged
}
