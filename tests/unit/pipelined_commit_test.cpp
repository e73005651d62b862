// The group writer writes batch N+1 while batch N's WAL sync runs: nothing is answered, published
// or readable before its sync, and a failed sync refuses every batch written after it and undoes
// them before writes resume.
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

#include "storage/codec.hpp"
#include "storage/ledger.hpp"
#include "tests/support/gated_wal.hpp"
#include "tests/support/temp_dir.hpp"

using namespace tenure;
using namespace tenure::storage;

namespace {

test::SyncGate gate;

WriteOp acquire_op(const std::string& key) {
  WriteOp op;
  op.key = key;
  KeyState state;
  state.lease = Lease{};
  state.lease->owner = "o";
  state.lease->token = 1;
  state.last_token = 1;
  op.row = encode_state(state);
  Event event;
  event.type = EventType::acquired;
  event.key = key;
  event.owner = "o";
  event.token = 1;
  op.events.push_back(std::move(event));
  return op;
}

// One submitted group and how it was answered.
struct Outcome {
  std::mutex mutex;
  std::condition_variable changed;
  int answers = 0;
  bool ok = false;
  int order = 0;

  CommitDone done(std::atomic<int>& counter) {
    return [this, &counter](bool result, std::vector<WriteOp>&) {
      std::lock_guard lock(mutex);
      ++answers;
      ok = result;
      order = ++counter;
      changed.notify_all();
    };
  }
  bool answered() {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return answers > 0; });
  }
  bool unanswered_for(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex);
    return !changed.wait_for(lock, d, [&] { return answers > 0; });
  }
};

void submit(Ledger& ledger, const std::string& key, Outcome& outcome, std::atomic<int>& counter) {
  std::vector<WriteOp> ops;
  ops.push_back(acquire_op(key));
  ledger.writer().submit(std::move(ops), outcome.done(counter));
}

// Submits an acquire of `key` and waits for it to be committed.
void commit(Ledger& ledger, const std::string& key, std::atomic<int>& counter) {
  Outcome outcome;
  submit(ledger, key, outcome, counter);
  REQUIRE(outcome.answered());
  REQUIRE(outcome.ok);
}

// Enough ops that the writer writes them while a sync runs, rather than wait for its end.
constexpr int kMany = 64;

void submit_many(Ledger& ledger, const std::string& key, Outcome& outcome,
                 std::atomic<int>& counter) {
  std::vector<WriteOp> ops;
  ops.push_back(acquire_op(key));
  for (int i = 1; i < kMany; ++i) ops.push_back(acquire_op(key + std::to_string(i)));
  ledger.writer().submit(std::move(ops), outcome.done(counter));
}

bool has_lease(const Ledger& ledger, const std::string& key) {
  LoadedState loaded;
  REQUIRE(ledger.load(key, loaded).ok());
  return loaded.state.lease.has_value();
}

bool wait_until(const std::function<bool()>& ready) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ready() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ready();
}

struct GatedLedger {
  test::TempDir dir;
  std::shared_ptr<rocksdb::FileSystem> fs =
      std::make_shared<test::GatedFileSystem>(rocksdb::FileSystem::Default(), gate);
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  std::unique_ptr<Ledger> ledger;
  std::vector<Event> published;
  // Events revision() did not cover yet when published: a watch that subscribed just after one
  // and then read revision() would miss it (§5).
  std::vector<Revision> uncovered;
  std::mutex published_mutex;

  std::function<void(LedgerOptions&)> tune;

  explicit GatedLedger(std::function<void(LedgerOptions&)> tune_options = {})
      : tune(std::move(tune_options)) {
    gate.set(false, false);
    gate.slow_ms = 0;
    open();
  }
  ~GatedLedger() {
    gate.set(false, false);
    gate.slow_ms = 0;
    ledger.reset();
  }
  void open() {
    ledger.reset();
    LedgerOptions options;
    options.path = dir.str("ledger");
    options.env = env.get();
    if (tune) tune(options);
    Status status;
    ledger = Ledger::open(options, status);
    INFO(status.message());
    REQUIRE(ledger);
    ledger->writer().set_event_sink([this](const std::vector<const Events*>& events) {
      Revision covered = ledger->revision();
      std::lock_guard lock(published_mutex);
      for (const Events* e : events) {
        published.insert(published.end(), e->begin(), e->end());
        for (const Event& event : *e) {
          if (event.revision > covered) uncovered.push_back(event.revision);
        }
      }
    });
  }
  std::size_t published_count() {
    std::lock_guard lock(published_mutex);
    return published.size();
  }
};

}  // namespace

TEST_CASE("the next batch is written while a sync runs, and answered only after its own sync",
          "[group_commit]") {
  GatedLedger g;
  Ledger& ledger = *g.ledger;
  Revision start = ledger.revision();
  std::atomic<int> counter{0};
  Outcome a, b;
  gate.set(true, false);
  // Nothing else in flight: "a" is committed, and its sync held, on the thread that submits it.
  std::jthread lone([&] { submit(ledger, "a", a, counter); });
  REQUIRE(gate.wait_for_sync());
  submit_many(ledger, "b", b, counter);
  // "b" is written (into the WAL and the memtables) while "a"'s sync is held...
  REQUIRE(wait_until([&] { return ledger.writer().stats().batches == 2; }));
  // ...but neither is answered, published, counted durable or readable before a sync covers it.
  CHECK(a.unanswered_for(std::chrono::milliseconds(50)));
  CHECK(b.unanswered_for(std::chrono::milliseconds(0)));
  CHECK(g.published_count() == 0);
  CHECK(ledger.revision() == start);
  CHECK_FALSE(has_lease(ledger, "a"));
  CHECK_FALSE(has_lease(ledger, "b"));
  std::vector<Event> events;
  REQUIRE(ledger.events_from(start + 1, 10, events).ok());
  CHECK(events.empty());

  gate.set(false, false);
  REQUIRE(a.answered());
  REQUIRE(b.answered());
  CHECK((a.ok && b.ok));
  CHECK(a.order == 1);
  CHECK(b.order == 2);
  CHECK(ledger.revision() == start + 1 + kMany);
  CHECK(has_lease(ledger, "b"));
  CHECK(g.published_count() == 1 + kMany);
  CHECK(ledger.writer().stats().syncs <= 2);
}

TEST_CASE("a failed sync refuses its batch and every batch written after it, and undoes them",
          "[group_commit]") {
  GatedLedger g;
  std::atomic<int> counter{0};
  commit(*g.ledger, "kept", counter);
  Ledger& ledger = *g.ledger;
  Revision durable = ledger.revision();

  Outcome a, b;
  gate.set(true, true);
  std::jthread lone([&] { submit(ledger, "a", a, counter); });
  REQUIRE(gate.wait_for_sync());
  submit_many(ledger, "b", b, counter);
  REQUIRE(wait_until([&] { return ledger.writer().stats().batches == 3; }));
  gate.set(false, true);  // "a"'s sync fails; "b" was written after it began
  REQUIRE(a.answered());
  REQUIRE(b.answered());
  CHECK_FALSE(a.ok);
  CHECK_FALSE(b.ok);
  CHECK(a.order < b.order);
  CHECK_FALSE(ledger.healthy());
  CHECK(ledger.revision() == durable);
  CHECK(g.published_count() == 1);
  CHECK_FALSE(has_lease(ledger, "a"));
  CHECK_FALSE(has_lease(ledger, "b"));
  CHECK(has_lease(ledger, "kept"));

  // Writes stay refused until every refusal is settled and the disk syncs again.
  gate.set(false, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK_FALSE(ledger.healthy());
  for (int i = 0; i < 1 + kMany; ++i) ledger.writer().refusal_settled();
  REQUIRE(wait_until([&] { return ledger.healthy(); }));

  // The refused batches are gone from the memtables too, not only hidden.
  CHECK_FALSE(has_lease(ledger, "a"));
  CHECK_FALSE(has_lease(ledger, "b"));
  std::vector<Event> events;
  REQUIRE(ledger.events_from(durable + 1, 10, events).ok());
  CHECK(events.empty());
  Outcome c;
  submit(ledger, "c", c, counter);
  REQUIRE(c.answered());
  CHECK(c.ok);
  CHECK(ledger.revision() == durable + 1);

  lone.join();  // its submit() has returned before the writer goes
  g.open();
  CHECK(g.ledger->revision() == durable + 1);
  CHECK(has_lease(*g.ledger, "kept"));
  CHECK(has_lease(*g.ledger, "c"));
  CHECK_FALSE(has_lease(*g.ledger, "a"));
  CHECK_FALSE(has_lease(*g.ledger, "b"));
}

TEST_CASE("a group refused while earlier groups await their answers is answered after them",
          "[group_commit]") {
  // A key actor counts its groups' answers in submit order: an answer that overtook an older
  // group's would close the actor's books before the older one arrives.
  GatedLedger g;
  Ledger& ledger = *g.ledger;
  std::atomic<int> counter{0};
  Outcome a, b, c;
  gate.set(true, true);
  std::jthread lone([&] {
    std::vector<WriteOp> ops;
    ops.push_back(acquire_op("a"));
    ledger.writer().submit(std::move(ops),
                           [&, done = a.done(counter)](bool ok, std::vector<WriteOp>& written) {
                             done(ok, written);
                             // The ledger is unhealthy now, and "b" is not yet answered.
                             submit(ledger, "c", c, counter);
                           });
  });
  REQUIRE(gate.wait_for_sync());
  submit_many(ledger, "b", b, counter);
  REQUIRE(wait_until([&] { return ledger.writer().stats().batches == 2; }));
  gate.set(false, true);  // "a"'s sync fails, and "b" with it
  REQUIRE(a.answered());
  REQUIRE(b.answered());
  REQUIRE(c.answered());
  CHECK_FALSE(c.ok);
  CHECK(a.order < b.order);
  CHECK(b.order < c.order);

  gate.set(false, false);
  for (int i = 0; i < 2 + kMany; ++i) ledger.writer().refusal_settled();
  REQUIRE(wait_until([&] { return ledger.healthy(); }));
  Outcome d;
  submit(ledger, "d", d, counter);
  REQUIRE(d.answered());
  CHECK(d.ok);
}

TEST_CASE("the keys of a refused checkpoint are written by the next one", "[group_commit]") {
  GatedLedger g([](LedgerOptions& o) { o.checkpoint_every = std::chrono::milliseconds(50); });
  std::atomic<int> counter{0};
  // "kept"'s sync succeeds; the next, the timed checkpoint's (its row and meta/checkpoint), fails,
  // whenever the checkpoint comes.
  gate.set(false, true, 1);
  commit(*g.ledger, "kept", counter);
  Ledger& ledger = *g.ledger;
  REQUIRE(wait_until([&] { return !ledger.healthy(); }));
  gate.set(false, false);
  REQUIRE(wait_until([&] { return ledger.healthy(); }));  // nobody's group was refused

  // A clean stop checkpoints what is left; the next open replays no journal below it.
  g.open();
  CHECK(has_lease(*g.ledger, "kept"));
}

TEST_CASE("at one group in flight, each is committed on its caller's thread; the writer sleeps",
          "[group_commit]") {
  // A timed checkpoint in the loop would wake the writer: on a loaded machine the 100 syncs can
  // outlast the default second.
  GatedLedger g([](LedgerOptions& o) { o.checkpoint_every = std::chrono::minutes(10); });
  Ledger& ledger = *g.ledger;
  std::atomic<int> counter{0};
  constexpr int kOps = 100;
  gate.slow_ms = 2;  // as on a disk
  WriterStats before = ledger.writer().stats();
  for (int i = 0; i < kOps; ++i) {
    Outcome outcome;
    std::thread::id answered_on;
    std::vector<WriteOp> ops;
    ops.push_back(acquire_op("k" + std::to_string(i)));
    CommitDone done = outcome.done(counter);
    ledger.writer().submit(std::move(ops), [&](bool ok, std::vector<WriteOp>& written) {
      answered_on = std::this_thread::get_id();
      done(ok, written);
    });
    // Answered, durable and published before submit() returned: no hand-off to the writer and
    // the completer threads and back (three wake-ups, most of a lone request's latency).
    REQUIRE(outcome.answers == 1);
    REQUIRE(outcome.ok);
    CHECK(answered_on == std::this_thread::get_id());
    CHECK(has_lease(ledger, "k" + std::to_string(i)));
  }
  WriterStats after = ledger.writer().stats();
  CHECK(after.committed_here - before.committed_here == kOps);
  CHECK(after.syncs - before.syncs == kOps);
  CHECK(g.published_count() == kOps);
  // Not per group: once when the first rows became durable, then it waits for their
  // checkpoint's time. A writer that the machine's load holds back can also come round while a
  // caller commits, and wait for it once more each time: a few, never one per group.
  CHECK(after.writer_wakeups - before.writer_wakeups < kOps / 10);
}

TEST_CASE("groups from many threads at light load are each answered once, in revision order",
          "[group_commit]") {
  // Callers take turns committing their own groups and handing the writer's state back, while
  // others queue theirs for the writer: none may be lost or answered twice.
  GatedLedger g;
  Ledger& ledger = *g.ledger;
  Revision start = ledger.revision();
  constexpr int kThreads = 4;
  constexpr int kEach = 300;
  std::atomic<int> counter{0};
  std::atomic<int> lost{0};
  std::vector<std::jthread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Outcome outcome;
        submit(ledger, "t" + std::to_string(t) + "-" + std::to_string(i), outcome, counter);
        if (!outcome.answered() || outcome.answers != 1 || !outcome.ok) {
          ++lost;
          return;
        }
      }
    });
  }
  threads.clear();
  REQUIRE(lost == 0);
  CHECK(counter == kThreads * kEach);
  CHECK(ledger.revision() == start + kThreads * kEach);
  std::vector<Event> published;
  {
    std::lock_guard lock(g.published_mutex);
    published = g.published;
    CHECK(g.uncovered.empty());
  }
  REQUIRE(published.size() == kThreads * kEach);
  for (std::size_t i = 0; i < published.size(); ++i) {
    CHECK(published[i].revision == start + 1 + i);
  }
  WriterStats stats = ledger.writer().stats();
  INFO("committed by their callers: " << stats.committed_here);
  CHECK(stats.committed_here > 0);
  CHECK(stats.committed_here < stats.groups);
}

TEST_CASE("callers answered by one sync share the next, which waits for half of them",
          "[group_commit]") {
  // Closed-loop callers answered together ask again nearly together: the sync after theirs waits
  // until half of them are back (for at most half as long as their sync took: here 500 ms or
  // more), rather than run for the first to come back and leave the rest to the sync after.
  GatedLedger g([](LedgerOptions& o) {
    o.gather_max = std::chrono::seconds(10);
    o.checkpoint_every = std::chrono::minutes(10);  // no checkpoint's sync in between
  });
  Ledger& ledger = *g.ledger;
  std::atomic<int> counter{0};
  Outcome a;
  gate.set(true, false);
  std::jthread lone([&] { submit(ledger, "a", a, counter); });
  REQUIRE(gate.wait_for_sync());
  // The callers queue behind "a"'s held sync, are written and synced together, and each asks
  // again once answered, noting which sync answered that.
  constexpr int kCallers = 8;
  std::array<Outcome, kCallers> first, again;
  std::array<std::atomic<std::uint64_t>, kCallers> synced_by{};
  std::vector<std::jthread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      submit(ledger, "b" + std::to_string(i), first[i], counter);
      if (!first[i].answered()) return;
      // 10 ms apart, as clients over a socket come back: the first alone would find the writer
      // idle (without the wait, it is written and synced on its own).
      std::this_thread::sleep_for(std::chrono::milliseconds(10 * i));
      std::vector<WriteOp> ops;
      ops.push_back(acquire_op("c" + std::to_string(i)));
      ledger.writer().submit(std::move(ops), [&, i, done = again[i].done(counter)](
                                                 bool ok, std::vector<WriteOp>& written) {
        synced_by[i] = ledger.writer().stats().syncs;  // counted before its answers
        done(ok, written);
      });
    });
  }
  REQUIRE(wait_until([&] { return ledger.writer().stats().groups == 1 + kCallers; }));
  gate.slow_ms = 1000;
  gate.set(false, false);
  REQUIRE(a.answered());
  std::uint64_t first_sync = std::numeric_limits<std::uint64_t>::max();
  for (int i = 0; i < kCallers; ++i) {
    REQUIRE(first[i].answered());
    REQUIRE(again[i].answered());
    CHECK((first[i].ok && again[i].ok));
    first_sync = std::min(first_sync, synced_by[i].load());
  }
  int in_first_sync = 0;
  for (int i = 0; i < kCallers; ++i) in_first_sync += synced_by[i] == first_sync ? 1 : 0;
  CHECK(in_first_sync >= kCallers / 2);
}

TEST_CASE("a refused trim of the event log is undone to the durable oldest event",
          "[group_commit]") {
  // Batches of events alone take no snapshot. A trim of the log is not events alone: were it
  // not to take one, the undo would put an older snapshot's bound back.
  GatedLedger g([](LedgerOptions& o) {
    o.events_keep = 5000;
    o.checkpoint_every = std::chrono::hours(1);
    o.checkpoint_ops = 1'000'000;
  });
  std::atomic<int> counter{0};
  // `n` ops on one key: a checkpoint of them is one batch.
  auto submit_on = [&](const std::string& key, int n, Outcome& outcome) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < n; ++i) ops.push_back(acquire_op(key));
    g.ledger->writer().submit(std::move(ops), outcome.done(counter));
  };
  Outcome first;
  submit_on("first", 5000, first);
  REQUIRE(first.answered());
  g.open();  // a checkpoint at 5,000, and a snapshot from before any trim
  Ledger& ledger = *g.ledger;
  Revision start_oldest = ledger.oldest_revision();

  // 4,500 more: the log is trimmed to events_keep by a batch of events alone.
  Outcome trimmed;
  submit_on("trimmed", 4500, trimmed);
  REQUIRE(trimmed.answered());
  REQUIRE(trimmed.ok);
  Revision durable_oldest = ledger.oldest_revision();
  REQUIRE(durable_oldest > start_oldest);

  // The next group's sync is held; its log length makes a checkpoint due, which trims the log
  // again in its batch. Both syncs then fail.
  std::uint64_t batches = ledger.writer().stats().batches;
  Outcome refused;
  gate.set(true, true);
  std::jthread lone([&] { submit_on("refused", 4500, refused); });
  REQUIRE(gate.wait_for_sync());
  REQUIRE(wait_until([&] { return ledger.writer().stats().batches == batches + 2; }));
  gate.set(false, true);
  REQUIRE(refused.answered());
  CHECK_FALSE(refused.ok);
  gate.set(false, false);
  for (int i = 0; i < 4500; ++i) ledger.writer().refusal_settled();
  REQUIRE(wait_until([&] { return ledger.healthy(); }));
  CHECK(ledger.oldest_revision() == durable_oldest);

  // The bound on disk is the durable one too (the clean stop's checkpoint does not trim).
  lone.join();  // its submit() has returned before the writer goes
  g.open();
  CHECK(g.ledger->oldest_revision() == durable_oldest);
  std::vector<Event> events;
  REQUIRE(g.ledger->events_from(durable_oldest, 1, events).ok());
  REQUIRE(events.size() == 1);
  CHECK(events[0].revision == durable_oldest);
}
