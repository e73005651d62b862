// Watches (§3 watch/unwatch, §5) over WebSocket and the socket: what a watcher sees, in which
// order, from which revision, and what happens to one that is too old or too slow.
#include <atomic>
#include <set>
#include <thread>

#include "tests/e2e/e2e.hpp"
#include "tests/e2e/prometheus.hpp"
#include "tests/e2e/ws_client.hpp"

using namespace e2e;

namespace {

// Sends every request at once (pipelined, ids from 1'000'000 up) and waits for every reply.
std::vector<Json> pipeline(LineClient& c, const std::vector<std::string>& bodies) {
  static std::int64_t next_id = 1'000'000;
  std::string bytes;
  std::vector<std::int64_t> ids;
  for (const std::string& body : bodies) {
    ids.push_back(next_id++);
    bytes += "{\"id\":" + std::to_string(ids.back()) + "," + body + "}\n";
  }
  if (!c.send_bytes(bytes, 120000ms)) throw std::runtime_error("the server closed the socket");
  std::vector<Json> replies;
  for (std::int64_t id : ids) replies.push_back(c.reply(id, 60000ms));
  return replies;
}

// `pairs` acquire+release pairs, each two events, on keys prefix0..prefix(spread-1).
std::vector<std::string> churn(const std::string& prefix, int pairs, int spread = 50) {
  std::vector<std::string> bodies;
  for (int i = 0; i < pairs; ++i) {
    std::string key = prefix + std::to_string(i % spread);
    bodies.push_back(acquire_req(key, "w", "\"ttl_ms\":60000"));
    bodies.push_back(release_req(key, "w"));
  }
  return bodies;
}

std::uint64_t revision_of(LineClient& c) { return c.call("\"op\":\"stats\"")["revision"].u64(); }

// Events from a WebSocket watcher until one with revision `last` (inclusive).
std::vector<Json> events_until(WsClient& c, std::uint64_t last, Millis timeout = 60000ms) {
  std::vector<Json> out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.empty() || out.back()["revision"].u64() < last) {
    auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    auto e = c.next_event(std::max(left, 0ms));
    if (!e) throw std::runtime_error("events stopped at " + std::to_string(out.size()));
    out.push_back(e->event);
  }
  return out;
}

std::vector<Json> events_until(LineClient& c, std::uint64_t last, Millis timeout = 60000ms) {
  std::vector<Json> out;
  while (out.empty() || out.back()["revision"].u64() < last) out.push_back(c.event(timeout));
  return out;
}

// Checks that `events` are exactly revisions first, first+1, ..., with no gap and no repeat.
void check_consecutive(const std::vector<Json>& events, std::uint64_t first) {
  REQUIRE_FALSE(events.empty());
  CHECK(events.front()["revision"] == first);
  std::size_t breaks = 0;
  for (std::size_t i = 1; i < events.size(); ++i) {
    if (events[i]["revision"].u64() != events[i - 1]["revision"].u64() + 1) {
      if (++breaks < 5) {
        UNSCOPED_INFO("after " << events[i - 1]["revision"] << " came " << events[i]["revision"]);
      }
    }
  }
  CHECK(breaks == 0);
}

}  // namespace

TEST_CASE("a prefix watch sees every kind of event, in revision order", "[e2e][watch]") {
  Daemon d(web_args());
  WsClient watcher(d.web_port());
  Json w = watcher.call("\"op\":\"watch\",\"prefix\":\"p/\"");
  REQUIRE(w["status"] == "watching");
  CHECK(w["revision"] == 0);
  WsClient key_watcher(d.web_port());
  Json kw = key_watcher.call("\"op\":\"watch\",\"key\":\"p/a\"");
  REQUIRE(kw["status"] == "watching");
  CHECK_FALSE(kw["watch_id"].same_as(w["watch_id"]));

  auto c = d.connect();
  REQUIRE(c.call(acquire_req("p/a", "alice", "\"ttl_ms\":30000"))["status"] == "acquired");
  REQUIRE(c.call(acquire_req("q/x", "alice"))["status"] == "acquired");  // not watched
  REQUIRE(c.call(renew_req("p/a", "alice", "\"ttl_ms\":40000"))["status"] == "renewed");
  REQUIRE(c.call(release_req("p/a", "alice"))["status"] == "released");
  REQUIRE(c.call(acquire_req("p/b", "bob", "\"ttl_ms\":100"))["status"] == "acquired");
  Json expired = watcher.call("\"op\":\"ping\"");  // keeps the watcher's reads going meanwhile
  REQUIRE(expired["status"] == "pong");
  REQUIRE(c.call(acquire_req("p/c", "carol", "\"open_ended\":true"))["status"] == "acquired");
  REQUIRE(c.call("\"op\":\"revoke\",\"key\":\"p/c\"")["status"] == "revoked");

  std::vector<Json> events;
  while (events.size() < 7) events.push_back(watcher.event(5000ms));
  std::vector<std::string> types;
  for (const Json& e : events) types.push_back(e["event"].str());
  // The expiry of p/b comes when its timer fires, so anywhere after its acquire.
  std::vector<std::string> expected{"acquired", "renewed",  "released", "acquired",
                                    "expired",  "acquired", "revoked"};
  auto expired_at = std::find(types.begin(), types.end(), "expired") - types.begin();
  CHECK(expired_at >= 4);
  std::vector<std::string> without_expiry = types;
  without_expiry.erase(without_expiry.begin() + expired_at);
  CHECK(without_expiry == std::vector<std::string>{"acquired", "renewed", "released", "acquired",
                                                   "acquired", "revoked"});
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Json& e = events[i];
    INFO(e);
    CHECK(e["watch_id"].same_as(w["watch_id"]));
    CHECK(e["key"].str().starts_with("p/"));
    CHECK(e["owner"].is_string());
    CHECK(e["token"] == 1);
    CHECK(time_ms(e["at"]).has_value());
    if (e["key"] == "p/c") {
      CHECK(e["expires_at"] == nullptr);
    } else {
      CHECK(time_ms(e["expires_at"]).has_value());
    }
    if (i > 0) CHECK(e["revision"].u64() > events[i - 1]["revision"].u64());
  }
  CHECK(types.size() == expected.size());
  CHECK(watcher.next_event(300ms) == std::nullopt);  // nothing for q/x

  std::vector<std::string> key_types;
  for (int i = 0; i < 3; ++i) key_types.push_back(key_watcher.event(5000ms)["event"].str());
  CHECK(key_types == std::vector<std::string>{"acquired", "renewed", "released"});
  CHECK(key_watcher.next_event(300ms) == std::nullopt);
}

TEST_CASE("the expired event is pushed when the timer fires, untouched", "[e2e][watch]") {
  Daemon d(web_args());
  WsClient watcher(d.web_port());
  REQUIRE(watcher.call("\"op\":\"watch\",\"key\":\"exp\"")["status"] == "watching");
  {
    auto c = d.connect();
    REQUIRE(c.call(acquire_req("exp", "o", "\"ttl_ms\":1500"))["status"] == "acquired");
  }  // nobody speaks to the server from now on
  CHECK(watcher.event(5000ms)["event"] == "acquired");
  auto e = watcher.next_event(10000ms);
  REQUIRE(e);
  CHECK(e->event["event"] == "expired");
  auto deadline = time_ms(e->event["expires_at"]);
  auto at = time_ms(e->event["at"]);
  REQUIRE(deadline);
  REQUIRE(at);
  CHECK(*at >= *deadline);
  INFO("arrived " << e->arrived_ms - *deadline << " ms after the deadline");
  CHECK(e->arrived_ms - *deadline < 1000);  // generous: it is typically a few ms
  CHECK(e->arrived_ms - *deadline > -50);   // not before (allowing for clock reading skew)
}

TEST_CASE("resuming from a revision under concurrent writes: no gap, no duplicate",
          "[e2e][watch]") {
  Daemon d(web_args({"--sync", "none"}));
  auto c = d.connect();
  std::atomic<bool> writer_done{false};
  std::string writer_error;
  std::thread writer([&] {
    try {
      auto w = d.connect();
      for (int round = 0; round < 20; ++round) pipeline(w, churn("r/", 150));
    } catch (const std::exception& e) {
      writer_error = e.what();
    }
    writer_done = true;
  });
  REQUIRE(wait_until([&] { return revision_of(c) >= 1000; }, 30000ms));
  // Three watchers join while the writer runs, replaying from different points.
  WsClient from_start(d.web_port());
  REQUIRE(from_start.call("\"op\":\"watch\",\"prefix\":\"r/\",\"from_revision\":1")["status"] ==
          "watching");
  std::uint64_t middle = revision_of(c) - 300;
  WsClient from_middle(d.web_port());
  REQUIRE(from_middle.call("\"op\":\"watch\",\"prefix\":\"r/\",\"from_revision\":" +
                           std::to_string(middle))["status"] == "watching");
  auto on_socket = d.connect();
  std::uint64_t later = revision_of(c) - 10;
  REQUIRE(on_socket.call("\"op\":\"watch\",\"from_revision\":" + std::to_string(later))["status"] ==
          "watching");
  writer.join();
  REQUIRE(writer_error.empty());
  std::uint64_t last = revision_of(c);
  CHECK(last == 6000);
  check_consecutive(events_until(from_start, last), 1);
  check_consecutive(events_until(from_middle, last), middle);
  check_consecutive(events_until(on_socket, last), later);
}

TEST_CASE("a watch from a revision the ledger no longer keeps gets compacted", "[e2e][watch]") {
  // Events are trimmed in steps of 4096 beyond --events-keep.
  Daemon d(web_args({"--sync", "none", "--events-keep", "10"}));
  auto c = d.connect();
  pipeline(c, churn("c/", 2200));
  std::uint64_t last = revision_of(c);
  // The log is trimmed below a checkpoint, which lands on the writer thread after the replies.
  REQUIRE(wait_until(
      [&] {
        Exposition e = parse_exposition(http_get(d.web_port(), "/metrics").body);
        return e.samples["tenure_oldest_revision"] > 1;
      },
      10000ms));
  WsClient ws(d.web_port());
  Json w = ws.call("\"op\":\"watch\",\"from_revision\":1");
  REQUIRE(w["status"] == "watching");
  Json compacted = ws.event(5000ms);
  CHECK(compacted["event"] == "compacted");
  CHECK(compacted["watch_id"].same_as(w["watch_id"]));
  std::uint64_t oldest = compacted["oldest_revision"].u64();
  CHECK(oldest > 1);
  CHECK(oldest <= last);
  // The watch is gone...
  check_error(ws.call("\"op\":\"unwatch\",\"watch_id\":" + w["watch_id"].dump()), "bad_request",
              "watch_id");
  CHECK(ws.next_event(200ms) == std::nullopt);
  // ...and one from the oldest kept revision replays what is kept.
  REQUIRE(ws.call("\"op\":\"watch\",\"from_revision\":" + std::to_string(oldest))["status"] ==
          "watching");
  check_consecutive(events_until(ws, last), oldest);
  // The socket says the same.
  Json on_socket = c.call("\"op\":\"watch\",\"from_revision\":2");
  REQUIRE(on_socket["status"] == "watching");
  CHECK(c.event(5000ms)["event"] == "compacted");
}

TEST_CASE("a watcher that does not read lags, and resumes without a gap", "[e2e][watch]") {
  // The bound must exceed the largest commit batch (a reader that keeps up never lags), and the
  // events must outgrow it plus what the kernel's socket buffers hold (loopback TCP: 10 MiB at
  // most): 40000 events with long keys are 28 MB.
  // The write timeout is not what this tests: on a slow machine (ThreadSanitizer) the events
  // take longer than its default to outgrow the bound, and the stalled watchers were closed.
  Daemon d(web_args({"--sync", "none", "--watch-queue", "2000", "--write-timeout", "10m"}));
  auto c = d.connect();
  WsClient stalled(d.web_port());
  Json w = stalled.call("\"op\":\"watch\"");
  REQUIRE(w["status"] == "watching");
  auto socket_stalled = d.connect();
  Json sw = socket_stalled.call("\"op\":\"watch\"");
  REQUIRE(sw["status"] == "watching");
  WsClient reader(d.web_port());
  REQUIRE(reader.call("\"op\":\"watch\"")["status"] == "watching");
  constexpr int kEvents = 40000;
  // Rounds of 500 events, each read by the reader before the next: it stays well within the
  // bound however slow the machine, while the stalled watchers fall ever further behind.
  std::string prefix = "lag/" + std::string(400, 'k') + "/";
  for (int round = 1; round <= kEvents / 500; ++round) {
    pipeline(c, churn(prefix, 250));
    REQUIRE(reader.wait_events(500 * round, 30000ms));
  }
  std::uint64_t last = revision_of(c);
  REQUIRE(last == kEvents);
  // The stalled watchers slowed nobody: the reader got everything, and was never cut off.
  std::vector<Json> read;
  for (const ReceivedEvent& e : reader.events()) read.push_back(e.event);
  check_consecutive(read, 1);
  // Both stalled watches were cancelled; the reader's remains.
  REQUIRE(wait_until([&] { return c.call("\"op\":\"stats\"")["watchers"] == 1; }, 10000ms));

  // A stalled watcher reads what it was sent, then `lagged` naming the first revision it missed.
  // It resumes from there, reading, and the replay (paced by its reading) brings the rest,
  // without a gap or a repeat across the seam.
  auto read_until_lagged = [&](auto& client, const Json& watching, std::uint64_t& next) {
    for (;;) {
      Json e = client.event(10000ms);
      if (e["event"] == "lagged") {
        CHECK(e["watch_id"].same_as(watching["watch_id"]));
        CHECK(e["resume_from"] == next);
        return true;
      }
      REQUIRE(e["revision"] == next);
      if (++next > last) return false;
    }
  };
  std::uint64_t next = 1;
  REQUIRE(read_until_lagged(stalled, w, next));
  CHECK(next < last);
  int resumes = 0;
  for (bool lagged = true; lagged; ++resumes) {
    Json resumed = stalled.call("\"op\":\"watch\",\"from_revision\":" + std::to_string(next));
    REQUIRE(resumed["status"] == "watching");
    lagged = read_until_lagged(stalled, resumed, next);
  }
  UNSCOPED_INFO("resumed " << resumes << " times");
  CHECK(next == last + 1);
  next = 1;
  REQUIRE(read_until_lagged(socket_stalled, sw, next));
  CHECK(socket_stalled.call("\"op\":\"ping\"")["status"] == "pong");  // the socket stays
}

TEST_CASE("a replay longer than --watch-queue reaches a reading client whole", "[e2e][watch]") {
  // The replay is read from the log as the client takes it; it is no lag.
  Daemon d(web_args({"--sync", "none", "--watch-queue", "5"}));
  auto c = d.connect();
  pipeline(c, churn("q/", 500));
  WsClient ws(d.web_port());
  REQUIRE(ws.call("\"op\":\"watch\",\"from_revision\":1")["status"] == "watching");
  auto on_socket = d.connect();
  REQUIRE(on_socket.call("\"op\":\"watch\",\"from_revision\":1")["status"] == "watching");
  // Each replay read whole, one client after the other: the other one's waits, paced.
  std::uint64_t replayed = revision_of(c);
  std::vector<Json> from_ws = events_until(ws, replayed);
  std::vector<Json> from_socket = events_until(on_socket, replayed);
  // Then live events, one per commit, read after them: a live batch larger than the bound would
  // lag. (Live events that come while a replay is still being read count against the bound.)
  for (int i = 0; i < 50; ++i) {
    REQUIRE(c.call(acquire_req("q/live", "w"))["status"] == "acquired");
    REQUIRE(c.call(release_req("q/live", "w"))["status"] == "released");
  }
  std::uint64_t last = revision_of(c);
  REQUIRE(last == 1100);
  for (Json& e : events_until(ws, last)) from_ws.push_back(std::move(e));
  for (Json& e : events_until(on_socket, last)) from_socket.push_back(std::move(e));
  check_consecutive(from_ws, 1);
  check_consecutive(from_socket, 1);
}

TEST_CASE("200 concurrent subscribers all receive the same event sequence", "[e2e][watch]") {
  Daemon d(web_args({"--sync", "none"}));
  std::vector<std::unique_ptr<WsClient>> subscribers;
  for (int i = 0; i < 200; ++i) {
    subscribers.push_back(std::make_unique<WsClient>(d.web_port()));
    REQUIRE(subscribers.back()->call("\"op\":\"watch\",\"prefix\":\"f/\"")["status"] == "watching");
  }
  auto c = d.connect();
  pipeline(c, churn("f/", 250));
  std::vector<std::string> reference;
  for (auto& s : subscribers) {
    REQUIRE(s->wait_events(500, 30000ms));
    std::vector<std::string> seen;
    for (const ReceivedEvent& e : s->events()) {
      seen.push_back(e.event["revision"].dump() + " " + e.event["event"].str() + " " +
                     e.event["key"].str());
    }
    if (reference.empty()) reference = seen;
    CHECK(seen == reference);
  }
  REQUIRE(reference.size() == 500);
  // Pipelined acquires of different keys commit in any order: revision 1 is one of them.
  CHECK(reference.front().starts_with("1 acquired f/"));
}

TEST_CASE("many watches per connection; unwatch ends one", "[e2e][watch]") {
  Daemon d;
  auto c = d.connect();
  Json all = c.call("\"op\":\"watch\"");
  Json some = c.call("\"op\":\"watch\",\"prefix\":\"u/\"");
  REQUIRE(all["status"] == "watching");
  REQUIRE(some["status"] == "watching");
  REQUIRE(c.call(acquire_req("u/1", "o"))["status"] == "acquired");
  std::set<std::string> ids;
  for (int i = 0; i < 2; ++i) ids.insert(c.event(5000ms)["watch_id"].dump());
  CHECK(ids == std::set<std::string>{all["watch_id"].dump(), some["watch_id"].dump()});
  Json u = c.call("\"op\":\"unwatch\",\"watch_id\":" + some["watch_id"].dump());
  CHECK(u["status"] == "unwatched");
  REQUIRE(c.call(acquire_req("u/2", "o"))["status"] == "acquired");
  Json e = c.event(5000ms);
  CHECK(e["watch_id"].same_as(all["watch_id"]));
  CHECK(e["key"] == "u/2");
  CHECK_FALSE(c.next_event(300ms));
  check_error(c.call("\"op\":\"unwatch\",\"watch_id\":" + some["watch_id"].dump()), "bad_request",
              "watch_id");
  check_error(c.call("\"op\":\"unwatch\",\"watch_id\":999"), "bad_request", "watch_id");
  // Another connection's watch is not this one's to end.
  auto other = d.connect();
  check_error(other.call("\"op\":\"unwatch\",\"watch_id\":" + all["watch_id"].dump()),
              "bad_request", "watch_id");
  CHECK(c.call("\"op\":\"stats\"")["watchers"] == 1);
  c.close();
  REQUIRE(wait_until([&] { return other.call("\"op\":\"stats\"")["watchers"] == 0; }, 5000ms));
}

TEST_CASE("tenure watch prints events as they happen", "[e2e][watch]") {
  Daemon d;
  auto c = d.connect();
  REQUIRE(c.call(acquire_req("cli/old", "o"))["status"] == "acquired");
  ProcessResult json_out;
  ProcessResult human_out;
  ProcessOptions briefly;  // `tenure watch` runs until stopped
  briefly.timeout = 4000ms;
  std::thread json_watch([&] {
    json_out = run_process(
        {tenure_cli_path(), "--socket", d.socket_path(), "--json", "watch", "cli/", "--from", "1"},
        briefly);
  });
  std::thread human_watch([&] {
    human_out = run_process(
        {tenure_cli_path(), "--socket", d.socket_path(), "watch", "--key", "cli/new"}, briefly);
  });
  REQUIRE(wait_until([&] { return c.call("\"op\":\"stats\"")["watchers"] == 2; }, 3000ms));
  REQUIRE(c.call(acquire_req("cli/new", "o", "\"ttl_ms\":30000"))["status"] == "acquired");
  REQUIRE(c.call(acquire_req("other", "o"))["status"] == "acquired");
  json_watch.join();
  human_watch.join();
  INFO(json_out.describe());
  INFO(human_out.describe());
  std::vector<Json> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = json_out.out.find('\n', start)) != std::string::npos; start = nl + 1) {
    auto line = Json::parse(json_out.out.substr(start, nl - start));
    REQUIRE(line);
    lines.push_back(*line);
  }
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["status"] == "watching");
  CHECK(lines[1]["key"] == "cli/old");
  CHECK(lines[1]["revision"] == 1);
  CHECK(lines[2]["key"] == "cli/new");
  CHECK(lines[2]["event"] == "acquired");
  CHECK(human_out.out.find("acquired cli/new by o, token 1") != std::string::npos);
  CHECK(human_out.out.find("cli/old") == std::string::npos);
  CHECK(human_out.err.find("watching cli/new") != std::string::npos);
}
