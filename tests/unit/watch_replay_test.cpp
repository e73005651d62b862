// A watch replaying the log while the log is trimmed under it: it must end `compacted`, never
// deliver past a gap. A ledger of its own (TrimmedLog) makes the trim come between two chunks.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "actors/engine_core.hpp"
#include "actors/watch.hpp"
#include "core/clock.hpp"

using namespace tenure;

namespace {

constexpr Revision kNewest = 5000;

// Events 1..newest; once the first chunk is read, everything below `trim_to` is gone.
class TrimmedLog : public storage::LedgerStore {
 public:
  explicit TrimmedLog(Revision trim_to, Revision newest = kNewest)
      : newest(newest), trim_to_(trim_to) {}

  storage::Status events_from(Revision from, std::size_t limit,
                              std::vector<Event>& events) const override {
    events.clear();
    Revision first = reads_++ == 0 ? from : std::max(from, trim_to_);
    for (Revision r = first; r <= newest && events.size() < limit; ++r) {
      Event e;
      e.key = "k";
      e.revision = r;
      events.push_back(std::move(e));
    }
    return {};
  }
  Revision revision() const override { return newest; }
  Revision oldest_revision() const override { return reads_ > 1 ? trim_to_ : 1; }

  storage::Status load(std::string_view, storage::LoadedState&) const override { return {}; }
  storage::Status scan_leases(
      const std::function<void(std::string, storage::LoadedState)>&) const override {
    return {};
  }
  storage::Status list(std::string_view, std::string_view, std::size_t, Millis,
                       std::vector<storage::LeaseRow>&, bool&) const override {
    return {};
  }
  storage::Status history(std::string_view, Token, std::size_t, std::vector<TenureRecord>&,
                          bool&) const override {
    return {};
  }
  storage::Status compact_history(Millis, std::size_t&) override { return {}; }
  storage::Status backup(const std::string&) const override { return {}; }
  void submit(std::vector<storage::WriteOp>, storage::CommitDone) override {}
  void refusal_settled() override {}
  void set_event_sink(storage::EventSink) override {}
  void flush() override {}
  void stop() override {}
  bool healthy() const override { return true; }
  Token token_floor() const override { return 0; }
  const std::string& recovery_note() const override { return note_; }
  storage::WriterStats stats() const override { return {}; }
  std::string last_error() const override { return {}; }

  Revision newest;  // grows as a test commits more

 private:
  Revision trim_to_;
  mutable int reads_ = 0;
  std::string note_;
};

struct Recorder : WatchSink {
  void on_watch_events(std::uint64_t, const EventBatch& events) override {
    for (const Event& e : *events) revisions.push_back(e.revision);
  }
  void on_watch_compacted(std::uint64_t, Revision at) override { oldest = at; }
  void on_watch_failed(std::uint64_t, Revision, const std::string&) override { failed = true; }

  std::vector<Revision> revisions;
  std::optional<Revision> oldest;
  bool failed = false;
};

// An engine core of one shard over `log`, whose turns run when the test runs `io`.
struct ReplayRig {
  explicit ReplayRig(std::unique_ptr<TrimmedLog> owned) : log(*owned) {
    config.shards = 1;
    core = std::make_unique<EngineCore>(io, clock, config, std::move(owned));
  }
  // Starts a watch of every key from revision 1 into `sink`, and runs its first turns.
  std::shared_ptr<Watch> replay_into(const std::shared_ptr<WatchSink>& sink) {
    auto watch = std::make_shared<Watch>(1, WatchFilter{}, sink);
    watch->start(*core, Revision{1});
    io.run();
    return watch;
  }

  boost::asio::io_context io;
  MockClock clock;
  EngineConfig config;
  TrimmedLog& log;
  std::unique_ptr<EngineCore> core;
};

}  // namespace

TEST_CASE("a replay the trim overtakes ends compacted, with no gap", "[watch]") {
  ReplayRig rig(std::make_unique<TrimmedLog>(3000));
  auto recorder = std::make_shared<Recorder>();
  rig.replay_into(recorder);

  // The first chunk (1..1024) went out; the next read found 3000 first, and the watch ended.
  REQUIRE_FALSE(recorder->revisions.empty());
  CHECK(recorder->revisions.front() == 1);
  for (std::size_t i = 1; i < recorder->revisions.size(); ++i) {
    REQUIRE(recorder->revisions[i] == recorder->revisions[i - 1] + 1);
  }
  CHECK(recorder->revisions.back() < 3000);
  REQUIRE(recorder->oldest);
  CHECK(*recorder->oldest == 3000);
  CHECK_FALSE(recorder->failed);
}

namespace {

// A sink with room for 7 events, which writes them out only when the test says so.
struct Paced : Recorder {
  std::size_t room() const override { return kBound - unwritten; }
  bool drained() const override { return unwritten == 0; }
  void on_watch_events(std::uint64_t id, const EventBatch& events) override {
    unwritten += events->size();
    CHECK(unwritten <= kBound);
    Recorder::on_watch_events(id, events);
  }
  static constexpr std::size_t kBound = 7;
  std::size_t unwritten = 0;
};

}  // namespace

TEST_CASE("a replay reads no faster than its sink makes room", "[watch]") {
  ReplayRig rig(std::make_unique<TrimmedLog>(1));  // nothing trimmed
  auto sink = std::make_shared<Paced>();
  auto watch = rig.replay_into(sink);
  CHECK(sink->revisions.size() == Paced::kBound);  // and then it waits
  for (int writes = 0; sink->revisions.size() < kNewest; ++writes) {
    REQUIRE(writes < 1000);
    sink->unwritten = 0;
    watch->room_freed();
    rig.io.restart();
    rig.io.run();
  }
  for (std::size_t i = 0; i < sink->revisions.size(); ++i) {
    REQUIRE(sink->revisions[i] == i + 1);
  }
  CHECK_FALSE(sink->failed);
  CHECK_FALSE(sink->oldest);
}

namespace {

// Live events `from`..`to` of key "k", as the bus hands them to a watch.
EventBatch live_events(Revision from, Revision to) {
  auto events = std::make_shared<std::vector<Event>>();
  for (Revision r = from; r <= to; ++r) {
    Event e;
    e.key = "k";
    e.revision = r;
    events->push_back(std::move(e));
  }
  return events;
}

}  // namespace

TEST_CASE("a replay goes live only once its client has taken all of it", "[watch]") {
  ReplayRig rig(std::make_unique<TrimmedLog>(1, 10));
  auto sink = std::make_shared<Paced>();
  auto watch = rig.replay_into(sink);
  auto written = [&] {
    sink->unwritten = 0;
    watch->room_freed();
    rig.io.restart();
    rig.io.run();
  };

  written();  // 8..10: the log is read to its end, and 3 events are still on their way
  REQUIRE(sink->revisions.size() == 10);

  // Committed while the client still reads the replay: read from the log as it reads, not
  // heaped on top of what it has not taken yet (Paced checks its bound).
  rig.log.newest = 20;
  watch->on_events(live_events(11, 20));
  CHECK(sink->revisions.size() == 10);
  for (int writes = 0; sink->revisions.size() < 20 || sink->unwritten > 0; ++writes) {
    REQUIRE(writes < 10);
    written();
  }
  // Taken all: live from now on, delivered as they come.
  rig.log.newest = 22;
  watch->on_events(live_events(21, 22));
  REQUIRE(sink->revisions.size() == 22);
  for (std::size_t i = 0; i < sink->revisions.size(); ++i) {
    REQUIRE(sink->revisions[i] == i + 1);
  }
  CHECK_FALSE(sink->failed);
  CHECK_FALSE(sink->oldest);
}
