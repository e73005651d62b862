#include "storage/etcd_ledger.hpp"

#include <catch2/catch.hpp>
#include <future>

#include "core/slot.hpp"
#include "storage/codec.hpp"
#include "tests/support/etcd_process.hpp"
#include "tests/support/watch_collector.hpp"

using namespace tenure;
using storage::EtcdLedger;
using storage::WriteOp;

namespace {

constexpr Millis kNow = 1'700'000'000'000;

// A key whose slot is `slot`.
std::string key_in(std::uint32_t slot, int n = 0) {
  for (int i = 0;; ++i) {
    std::string key = "job/" + std::to_string(i);
    if (slot_of(key) == slot && n-- == 0) return key;
  }
}

WriteOp acquire(const std::string& key, Token token, const std::string& owner = "o") {
  KeyState state;
  Lease lease;
  lease.owner = owner;
  lease.token = token;
  lease.acquired_at = kNow;
  lease.expires_at = kNow + 60'000;
  lease.ttl_ms = 60'000;
  state.lease = lease;
  state.last_token = token;
  WriteOp op;
  op.key = key;
  op.row = storage::encode_state(state);
  op.tenures.push_back(TenureRecord{token, owner, kNow, std::nullopt, std::nullopt, {}});
  op.events.push_back(Event{EventType::acquired, key, owner, token, kNow, lease.expires_at, 0, {}});
  return op;
}

WriteOp release(const std::string& key, Token token, const std::string& owner = "o") {
  KeyState state;
  state.last_token = token;
  state.last_owner = owner;
  WriteOp op;
  op.key = key;
  op.row = storage::encode_state(state);
  op.tenures.push_back(TenureRecord{token, owner, kNow, kNow + 10, EndReason::released, {}});
  op.events.push_back(
      Event{EventType::released, key, owner, token, kNow + 10, std::nullopt, 0, {}});
  return op;
}

struct Committed {
  bool ok = false;
  std::vector<Revision> revisions;
};

// Submits one group and waits for its answer; a refusal is settled as the engine would.
Committed commit(EtcdLedger& ledger, std::vector<WriteOp> ops) {
  std::promise<Committed> answered;
  ledger.submit(std::move(ops), [&](bool ok, std::vector<WriteOp>& written) {
    Committed c{ok, {}};
    for (auto& op : written) {
      for (auto& e : op.events) c.revisions.push_back(e.revision);
      if (!ok) ledger.refusal_settled();
    }
    answered.set_value(c);
  });
  return answered.get_future().get();
}

// Claims `slot` in etcd as `node` would (no lease: the test plays the membership).
std::int64_t claim(storage::EtcdClient& client, const std::string& prefix, std::uint32_t slot,
                   storage::SlotClaims& claims) {
  char key[64];
  std::snprintf(key, sizeof key, "%s/slots/%03u", prefix.c_str(), slot);
  storage::EtcdTxn txn;
  txn.compare_create_revision(key, 0);
  txn.put(key, "node");
  storage::EtcdTxnResult result;
  REQUIRE(client.txn(txn, result).ok());
  REQUIRE(result.succeeded);
  claims.claim(slot, result.revision);
  return result.revision;
}

storage::EtcdLedgerOptions options_for(const test::EtcdCluster& etcd) {
  storage::EtcdLedgerOptions options;
  options.etcd.endpoints = etcd.endpoint_list();
  options.etcd.timeout = std::chrono::milliseconds(1500);
  options.prefix = "/t";
  return options;
}

std::unique_ptr<EtcdLedger> open(const storage::EtcdLedgerOptions& options,
                                 storage::SlotClaims& claims) {
  storage::Status status;
  auto ledger = EtcdLedger::open(options, claims, status);
  INFO(status.message());
  REQUIRE(ledger);
  return ledger;
}

// Records what an event sink is given, and which events the ledger's revision() did not cover
// yet when the sink got them: a watch that subscribed after such an event was handed out, and
// read revision() next, would start below it and never get it (a gap, §5).
struct SinkLog {
  std::mutex mutex;
  std::vector<Revision> revisions;
  std::vector<std::string> keys;
  std::vector<Revision> uncovered;
  storage::EventSink sink(const EtcdLedger& ledger) {
    return [this, &ledger](const std::vector<const Events*>& batches) {
      Revision covered = ledger.revision();
      std::lock_guard lock(mutex);
      for (const Events* events : batches) {
        for (const Event& e : *events) {
          revisions.push_back(e.revision);
          keys.push_back(e.key);
          if (e.revision > covered) uncovered.push_back(e.revision);
        }
      }
    };
  }
  std::vector<Revision> seen() {
    std::lock_guard lock(mutex);
    return revisions;
  }
  std::vector<Revision> seen_uncovered() {
    std::lock_guard lock(mutex);
    return uncovered;
  }
  // revision() runs ahead of the sink: tests that look at the sink wait for it.
  bool saw(Revision r) {
    std::lock_guard lock(mutex);
    return !revisions.empty() && revisions.back() >= r;
  }
};

// A ledger on a 3-member etcd, calling member 0 first and giving up on a call after a second,
// with `slot` claimed: a test stops member 0 to leave a write unanswered.
struct OnThreeMembers {
  test::EtcdCluster etcd{3};
  storage::EtcdLedgerOptions options;
  storage::SlotClaims claims;
  std::unique_ptr<EtcdLedger> ledger;

  explicit OnThreeMembers(std::uint32_t slot) : options(options_for(etcd)) {
    options.etcd.timeout = std::chrono::milliseconds(1000);
    storage::EtcdClient probe(options.etcd);
    claim(probe, options.prefix, slot, claims);
    ledger = open(options, claims);
  }
};

void wait_for(const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

TEST_CASE("a group commits in one transaction and is answered after it", "[etcd_ledger]") {
  test::EtcdCluster etcd(1);
  auto options = options_for(etcd);
  storage::SlotClaims claims;
  storage::EtcdClient probe(options.etcd);
  claim(probe, options.prefix, 3, claims);
  claim(probe, options.prefix, 7, claims);
  auto ledger = open(options, claims);
  SinkLog log;
  ledger->set_event_sink(log.sink(*ledger));

  std::string a = key_in(3), b = key_in(7), c = key_in(3, 1);
  // When the group is answered, another client already reads every row and event of it.
  std::promise<std::vector<std::string>> read_in_done;
  std::vector<WriteOp> ops;
  ops.push_back(acquire(a, 1));
  ops.push_back(acquire(b, 1));
  ops.push_back(acquire(c, 1));
  ledger->submit(std::move(ops), [&](bool ok, std::vector<WriteOp>& written) {
    CHECK(ok);
    std::vector<std::string> found;
    for (auto& op : written) {
      storage::KeyValue kv;
      REQUIRE(probe.get(ledger->lease_key(op.key), kv).ok());
      found.push_back(kv.value);
    }
    // The transaction's events are one etcd key, under its first revision.
    storage::KeyValue kv;
    REQUIRE(probe.get(ledger->event_key(1), kv).ok());
    CHECK(kv.create_revision != 0);
    REQUIRE(probe.get(ledger->event_key(2), kv).ok());
    CHECK(kv.create_revision == 0);
    read_in_done.set_value(found);
  });
  auto found = read_in_done.get_future().get();
  REQUIRE(found.size() == 3);
  CHECK(found[0] == storage::encode_state(*storage::decode_state(acquire(a, 1).row.value())));
  CHECK(ledger->stats().batches == 1);
  CHECK(ledger->stats().ops == 3);
  CHECK(ledger->revision() == 3);  // the sink saw them before the answer
  CHECK(log.seen() == std::vector<Revision>{1, 2, 3});

  storage::KeyValue rev;
  REQUIRE(probe.get("/t/rev", rev).ok());
  CHECK(rev.value == "3");
  // The rows are the codec's bytes, as RocksDB stores them.
  storage::LoadedState loaded;
  REQUIRE(ledger->load(b, loaded).ok());
  REQUIRE(loaded.state.lease);
  CHECK(loaded.state.lease->owner == "o");
  CHECK(loaded.state.last_token == 1);
  CHECK_FALSE(loaded.corrupt);
  REQUIRE(ledger->load("never", loaded).ok());
  CHECK_FALSE(loaded.state.lease);
  CHECK(loaded.state.last_token == 0);
}

TEST_CASE("revisions go up by one per event across nodes writing in turn", "[etcd_ledger]") {
  test::EtcdCluster etcd(1);
  auto options = options_for(etcd);
  storage::SlotClaims claims_a, claims_b;
  storage::EtcdClient probe(options.etcd);
  claim(probe, options.prefix, 1, claims_a);
  claim(probe, options.prefix, 2, claims_b);
  auto a = open(options, claims_a);
  auto b = open(options, claims_b);
  SinkLog log_a, log_b;
  a->set_event_sink(log_a.sink(*a));
  b->set_event_sink(log_b.sink(*b));

  std::vector<Revision> assigned;
  for (int i = 0; i < 10; ++i) {
    // Each one's P/rev is stale after the other wrote: the compare fails and it retries above.
    EtcdLedger& ledger = i % 2 == 0 ? *a : *b;
    std::uint32_t slot = i % 2 == 0 ? 1 : 2;
    std::vector<WriteOp> ops;
    ops.push_back(acquire(key_in(slot, i), 1));
    if (i % 3 == 0) ops.push_back(acquire(key_in(slot, 100 + i), 1));
    auto c = commit(ledger, std::move(ops));
    REQUIRE(c.ok);
    assigned.insert(assigned.end(), c.revisions.begin(), c.revisions.end());
  }
  std::vector<Revision> expected;
  for (Revision r = 1; r <= assigned.size(); ++r) expected.push_back(r);
  CHECK(assigned == expected);
  CHECK(a->stats().conflicts + b->stats().conflicts == 9);  // each turn found P/rev moved
  // Each node's sink saw every event, its own and the other's, in revision order.
  wait_for([&] { return log_a.saw(expected.size()) && log_b.saw(expected.size()); });
  CHECK(log_a.seen() == expected);
  CHECK(log_b.seen() == expected);
  // Either node's watch could have begun at any of these events and missed none.
  CHECK(log_a.seen_uncovered().empty());
  CHECK(log_b.seen_uncovered().empty());

  // A third node starting now continues above, and replays the log from etcd.
  storage::SlotClaims none;
  auto c = open(options, none);
  CHECK(c->revision() == expected.size());
  std::vector<Event> events;
  REQUIRE(c->events_from(3, 100, events).ok());
  REQUIRE(events.size() == expected.size() - 2);
  CHECK(events.front().revision == 3);
  CHECK(events.back().revision == expected.size());
}

TEST_CASE("a node whose claim was taken can never commit to that slot again", "[etcd_ledger]") {
  test::EtcdCluster etcd(1);
  auto options = options_for(etcd);
  storage::SlotClaims claims;
  storage::EtcdClient probe(options.etcd);
  std::int64_t ours = claim(probe, options.prefix, 5, claims);
  claim(probe, options.prefix, 6, claims);
  auto ledger = open(options, claims);
  std::vector<std::pair<std::uint32_t, std::int64_t>> lost;
  claims.set_lost_handler([&](std::uint32_t slot, std::int64_t revision) {
    lost.emplace_back(slot, revision);  // on the writer thread, before the answer
  });
  std::string key = key_in(5), other = key_in(6);
  REQUIRE(commit(*ledger, {acquire(key, 1)}).ok);

  // The claim expires and another node claims the slot: same key, new create revision. This
  // node's table still says it owns the slot (it was paused and has not heard).
  REQUIRE(probe.delete_range("/t/slots/005").ok());
  storage::SlotClaims thief;
  claim(probe, options.prefix, 5, thief);
  REQUIRE(claims.claim_revision(5) == ours);

  std::vector<WriteOp> ops;
  ops.push_back(release(key, 1));
  auto refused = commit(*ledger, std::move(ops));
  CHECK_FALSE(refused.ok);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0] == std::make_pair(std::uint32_t{5}, ours));
  CHECK_FALSE(claims.owns(5));
  storage::LoadedState loaded;
  REQUIRE(ledger->load(key, loaded).ok());
  CHECK(loaded.state.lease);  // the release never landed

  // Later writes to the slot are refused at once; other slots are not affected.
  CHECK_FALSE(commit(*ledger, {release(key, 1)}).ok);
  auto fine = commit(*ledger, {acquire(other, 1)});
  CHECK(fine.ok);
  CHECK(fine.revisions == std::vector<Revision>{2});
  CHECK(ledger->healthy());
  CHECK(lost.size() == 1);
}

TEST_CASE("reads return what was committed", "[etcd_ledger]") {
  test::EtcdCluster etcd(1);
  auto options = options_for(etcd);
  options.history_keep = 3;
  storage::SlotClaims claims;
  storage::EtcdClient probe(options.etcd);
  for (std::uint32_t slot = 0; slot < kSlots; slot += 2) claim(probe, options.prefix, slot, claims);
  auto ledger = open(options, claims);

  // Leases on keys spread over the owned slots; one of them expired already at kNow + 1.
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < 40; ++i) {
    std::string key = "job/" + std::to_string(i);
    if (slot_of(key) % 2 == 0) keys.push_back(key);
  }
  std::vector<WriteOp> ops;
  for (auto& key : keys) ops.push_back(acquire(key, 1));
  ops[5].row = storage::encode_state([&] {
    auto state = *storage::decode_state(*ops[5].row);
    state.lease->expires_at = kNow;
    return state;
  }());
  std::string expired = keys[5];
  REQUIRE(commit(*ledger, std::move(ops)).ok);
  std::sort(keys.begin(), keys.end());
  std::vector<storage::LeaseRow> rows;
  bool more = false;
  REQUIRE(ledger->list("job/", "", 10, kNow + 1, rows, more).ok());
  CHECK(rows.size() == 10);
  CHECK(more);
  CHECK(std::is_sorted(rows.begin(), rows.end(), [](auto& x, auto& y) { return x.key < y.key; }));
  std::vector<std::string> all;
  std::string after;
  for (;;) {
    REQUIRE(ledger->list("job/", after, 7, kNow + 1, rows, more).ok());
    for (auto& row : rows) all.push_back(row.key);
    if (!more) break;
    after = rows.back().key;
  }
  CHECK(all.size() == 39);  // every live lease once, in key order
  CHECK(std::is_sorted(all.begin(), all.end()));
  CHECK(std::find(all.begin(), all.end(), expired) == all.end());
  REQUIRE(ledger->list("zzz/", "", 10, kNow, rows, more).ok());
  CHECK(rows.empty());

  // History: the live tenure from the row, ended ones from their records, newest first, only
  // history_keep of them.
  std::string key = keys[0] == expired ? keys[1] : keys[0];
  for (Token t = 1; t <= 5; ++t) {
    if (t > 1) REQUIRE(commit(*ledger, {acquire(key, t)}).ok);
    REQUIRE(commit(*ledger, {release(key, t)}).ok);
  }
  REQUIRE(commit(*ledger, {acquire(key, 6)}).ok);
  std::vector<TenureRecord> records;
  REQUIRE(ledger->history(key, 0, 10, records, more).ok());
  REQUIRE(records.size() == 4);
  CHECK(records[0].token == 6);
  CHECK_FALSE(records[0].ended_at);
  CHECK(records[1].token == 5);
  CHECK(records[3].token == 3);  // 1 and 2 were trimmed
  CHECK_FALSE(more);
  REQUIRE(ledger->history(key, 6, 1, records, more).ok());
  REQUIRE(records.size() == 1);
  CHECK(records[0].token == 5);
  CHECK(more);

  // Recovery reads every owned slot's rows with a lease; a takeover reads one slot.
  std::size_t scanned = 0;
  REQUIRE(ledger->scan_leases([&](std::string, storage::LoadedState) { ++scanned; }).ok());
  CHECK(scanned == 40);
  std::vector<std::string> in_slot;
  std::uint32_t slot = slot_of(key);
  REQUIRE(ledger
              ->scan_slot(slot,
                          [&](std::string k, storage::LoadedState loaded) {
                            CHECK(loaded.state.lease);
                            in_slot.push_back(k);
                          })
              .ok());
  CHECK(std::find(in_slot.begin(), in_slot.end(), key) != in_slot.end());
  for (auto& k : in_slot) CHECK(slot_of(k) == slot);

  std::vector<Event> events;
  REQUIRE(ledger->events_from(41, 3, events).ok());
  REQUIRE(events.size() == 3);
  CHECK(events[0].revision == 41);
  CHECK(events[0].type == EventType::released);
  CHECK(events[0].key == key);

  // Ended tenures past the age limit go; the live one is the row's and stays.
  std::size_t dropped = 0;
  REQUIRE(ledger->compact_history(kNow + options.history_max_age + 1'000, dropped).ok());
  CHECK(dropped == 3);
  REQUIRE(ledger->history(key, 0, 10, records, more).ok());
  REQUIRE(records.size() == 1);
  CHECK(records[0].token == 6);

  CHECK(ledger->backup("/nonexistent").code() == storage::errc::rejected);
}

TEST_CASE("the ledger keeps committing when an etcd member dies", "[etcd_ledger]") {
  test::EtcdCluster etcd(3);
  auto options = options_for(etcd);
  storage::SlotClaims claims;
  storage::EtcdClient probe(options.etcd);
  claim(probe, options.prefix, 9, claims);
  auto ledger = open(options, claims);
  REQUIRE(commit(*ledger, {acquire(key_in(9, 0), 1)}).ok);
  int used = 0;
  while (ledger->client().current_endpoint() != etcd.endpoint(used)) ++used;
  etcd.kill(used);
  etcd.wait_healthy();
  for (int i = 1; i <= 5; ++i) {
    auto c = commit(*ledger, {acquire(key_in(9, i), 1)});
    INFO(ledger->last_error());
    REQUIRE(c.ok);
    CHECK(c.revisions == std::vector<Revision>{Revision(i + 1)});
  }
  wait_for([&] { return ledger->revision() == 6; });
  CHECK(ledger->revision() == 6);  // the watch moved to a live member too
  CHECK(ledger->client().current_endpoint() != etcd.endpoint(used));
}

TEST_CASE("a write to a paused etcd member is refused, and writes resume elsewhere",
          "[etcd_ledger]") {
  OnThreeMembers three(4);
  auto& etcd = three.etcd;
  auto& ledger = three.ledger;
  SinkLog log;
  ledger->set_event_sink(log.sink(*ledger));
  REQUIRE(commit(*ledger, {acquire(key_in(4, 0), 1)}).ok);
  REQUIRE(ledger->client().current_endpoint() == etcd.endpoint(0));

  // Sent, never answered: it may still commit when the member wakes, so it is not acknowledged.
  etcd.stop(0);
  auto lost = commit(*ledger, {acquire(key_in(4, 1), 1)});
  CHECK_FALSE(lost.ok);
  CHECK_FALSE(ledger->healthy());
  CHECK(ledger->last_error().find("after the request was sent") != std::string::npos);

  // Once the refusal is settled it reads P/rev elsewhere and takes writes again.
  wait_for([&] { return ledger->healthy(); });
  REQUIRE(ledger->healthy());
  auto next = commit(*ledger, {acquire(key_in(4, 2), 1)});
  REQUIRE(next.ok);
  CHECK(next.revisions == std::vector<Revision>{2});
  etcd.cont(0);
  auto after = commit(*ledger, {acquire(key_in(4, 3), 1)});
  REQUIRE(after.ok);
  // The events the sink saw have no gap, whatever became of the unanswered write.
  wait_for([&] { return ledger->revision() == after.revisions[0]; });
  auto seen = log.seen();
  REQUIRE(!seen.empty());
  for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i + 1);
  CHECK(seen.back() == after.revisions[0]);
}

TEST_CASE("a write whose outcome is unknown is fenced off before its keys are read again",
          "[etcd_ledger]") {
  OnThreeMembers three(6);
  auto& etcd = three.etcd;
  auto& ledger = three.ledger;
  REQUIRE(commit(*ledger, {acquire(key_in(6, 0), 1)}).ok);
  REQUIRE(ledger->client().current_endpoint() == etcd.endpoint(0));

  // Sent to a member that is paused: it takes the request in when it wakes, and may still pass
  // it to the leader then, on top of whatever was read meanwhile.
  etcd.stop(0);
  std::string key = key_in(6, 1);
  std::promise<std::pair<bool, bool>> refused;  // committed, then read back at once
  ledger->submit({acquire(key, 1)}, [&](bool ok, std::vector<WriteOp>& written) {
    // What the refused actor would do at its next turn: read its key back. Not yet.
    storage::LoadedState loaded;
    refused.set_value({ok, ledger->load(key, loaded).ok()});
    for (std::size_t i = 0; i < written.size(); ++i) ledger->refusal_settled();
  });
  auto [committed, read_back] = refused.get_future().get();
  REQUIRE_FALSE(committed);
  CHECK_FALSE(read_back);

  // Fenced: P/rev was put again, so the paused member's transaction fails its compare whenever
  // it arrives, and what is read now stays true.
  wait_for([&] { return ledger->healthy(); });
  REQUIRE(ledger->healthy());
  storage::LoadedState before;
  REQUIRE(ledger->load(key, before).ok());
  CHECK_FALSE(before.state.lease);
  etcd.cont(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  storage::LoadedState after;
  REQUIRE(ledger->load(key, after).ok());
  CHECK_FALSE(after.state.lease);
  CHECK(after.state.last_token == 0);
  auto next = commit(*ledger, {acquire(key, 1)});
  REQUIRE(next.ok);
  CHECK(next.revisions == std::vector<Revision>{2});
}

TEST_CASE("a group refused while earlier groups await their answers is answered after them",
          "[etcd_ledger]") {
  // A key actor counts its groups' answers in submit order: an answer that overtook an older
  // group's would close the actor's books before the older one arrives.
  OnThreeMembers three(5);
  auto& etcd = three.etcd;
  auto& ledger = three.ledger;
  REQUIRE(commit(*ledger, {acquire(key_in(5, 0), 1)}).ok);
  REQUIRE(ledger->client().current_endpoint() == etcd.endpoint(0));

  std::mutex mutex;
  std::vector<std::string> answered;  // in the order the groups were answered
  std::promise<void> all_answered;
  bool healthy_after_first = true;  // set on the writer's thread, read after all_answered
  auto done = [&](std::string name) {
    return [&, name](bool ok, std::vector<WriteOp>& written) {
      if (!ok) {
        for (std::size_t i = 0; i < written.size(); ++i) ledger->refusal_settled();
      }
      std::lock_guard lock(mutex);
      answered.push_back(name);
      if (answered.size() == 3) all_answered.set_value();
    };
  };
  etcd.stop(0);  // the first group is sent and never answered: refused when etcd times out
  ledger->submit({acquire(key_in(5, 1), 1)},
                 [&, first = done("first")](bool ok, std::vector<WriteOp>& written) {
                   first(ok, written);
                   // The ledger is unhealthy now, and "second" is not yet answered.
                   healthy_after_first = ledger->healthy();
                   ledger->submit({acquire(key_in(5, 3), 1)}, done("third"));
                 });
  ledger->submit({acquire(key_in(5, 2), 1)}, done("second"));
  REQUIRE(all_answered.get_future().wait_for(std::chrono::seconds(20)) ==
          std::future_status::ready);
  etcd.cont(0);
  std::lock_guard lock(mutex);
  CHECK_FALSE(healthy_after_first);
  CHECK(answered == std::vector<std::string>{"first", "second", "third"});
}

TEST_CASE("a node that only watches notices a silent stream and moves it", "[etcd_ledger]") {
  test::EtcdCluster etcd(3);
  auto options = options_for(etcd);
  options.etcd.timeout = std::chrono::milliseconds(1000);
  storage::SlotClaims none, claims;
  auto watcher = open(options, none);  // its calls and its watch go to member 0
  SinkLog log;
  watcher->set_event_sink(log.sink(*watcher));
  auto writer_options = options;
  writer_options.etcd.endpoints = {etcd.endpoint(1), etcd.endpoint(2)};
  storage::EtcdClient probe(writer_options.etcd);
  claim(probe, options.prefix, 8, claims);
  auto writer = open(writer_options, claims);

  REQUIRE(commit(*writer, {acquire(key_in(8, 0), 1)}).ok);
  wait_for([&] { return watcher->revision() == 1; });
  REQUIRE(watcher->revision() == 1);
  etcd.stop(0);
  // If member 0 led, the others elect a leader first: a write may be refused meanwhile.
  for (int i = 1; i <= 2; ++i) {
    wait_for([&] { return writer->healthy() && commit(*writer, {acquire(key_in(8, i), 1)}).ok; });
  }
  Revision last = writer->revision();
  CHECK(last >= 3);
  wait_for([&] { return log.saw(last); });
  CHECK(watcher->revision() == last);
  std::vector<Revision> expected;
  for (Revision r = 1; r <= last; ++r) expected.push_back(r);
  CHECK(log.seen() == expected);
  etcd.cont(0);
}

TEST_CASE("a batch larger than etcd takes is split, not refused", "[etcd_ledger]") {
  test::EtcdCluster etcd(1, {"--max-txn-ops", "128"});  // etcd's default
  auto options = options_for(etcd);
  storage::SlotClaims claims;
  storage::EtcdClient probe(options.etcd);
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) claim(probe, options.prefix, slot, claims);
  auto ledger = open(options, claims);
  std::mutex mutex;
  std::size_t ok = 0, refused = 0;
  for (int g = 0; g < 40; ++g) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < 4; ++i) ops.push_back(acquire("big/" + std::to_string(g * 4 + i), 1));
    ledger->submit(std::move(ops), [&](bool committed, std::vector<WriteOp>& written) {
      std::lock_guard lock(mutex);
      (committed ? ok : refused) += written.size();
      if (!committed) {
        for (std::size_t i = 0; i < written.size(); ++i) ledger->refusal_settled();
      }
    });
  }
  ledger->flush();
  CHECK(refused == 0);
  CHECK(ok == 160);
  CHECK(ledger->stats().max_batch < 128);  // rows, one key of events and P/rev per transaction
  std::vector<Event> events;
  REQUIRE(ledger->events_from(1, 1000, events).ok());
  CHECK(events.size() == 160);
}

TEST_CASE("the event log keeps its length by whole transactions", "[etcd_ledger]") {
  test::EtcdCluster etcd(1);
  auto options = options_for(etcd);
  options.events_keep = 100;
  storage::SlotClaims claims;
  storage::EtcdClient probe(options.etcd);
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) claim(probe, options.prefix, slot, claims);
  auto ledger = open(options, claims);
  // Five transactions of 1000 events: past 4096 + 100, the ones wholly older than the newest
  // 100 events go, and the log starts at a transaction's first revision.
  for (int t = 0; t < 5; ++t) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < 1000; ++i) ops.push_back(acquire("log/" + std::to_string(t * 1000 + i), 1));
    REQUIRE(commit(*ledger, std::move(ops)).ok);
  }
  CHECK(ledger->oldest_revision() == 3001);
  std::vector<Event> events;
  REQUIRE(ledger->events_from(1, 10, events).ok());
  REQUIRE(events.size() == 10);
  CHECK(events[0].revision == 3001);
  REQUIRE(ledger->events_from(4500, 3, events).ok());
  REQUIRE(events.size() == 3);
  CHECK(events[0].revision == 4500);  // from inside a transaction's key
  storage::RangeResult keys;
  REQUIRE(probe.range({"/t/events/", storage::prefix_end("/t/events/"), 0, false, 0}, keys).ok());
  CHECK(keys.kvs.size() == 2);
}

TEST_CASE("a node that read past trimmed events ends its watches compacted, never with a gap",
          "[etcd_ledger]") {
  // etcd drops its history (the puts of trimmed events) a second after: a stream reopened from
  // where it stopped is refused, and the watcher reads what the log keeps.
  test::EtcdCluster etcd(
      3, {"--auto-compaction-mode", "periodic", "--auto-compaction-retention", "1s"});
  auto options = options_for(etcd);
  // Slow to give up on member 0, so that it moves its stream only after the writer trimmed
  // events it never read.
  options.etcd.timeout = std::chrono::milliseconds(10000);
  options.events_keep = 100;
  storage::SlotClaims none, claims;
  EventBus bus;  // outlives the watcher, whose etcd watch thread publishes to it until it closes
  auto watcher = open(options, none);  // its calls and its watch go to member 0
  bus.published_through(watcher->revision());
  watcher->set_event_sink(
      [&bus](const std::vector<const Events*>& events) { bus.publish(events); });
  auto log = std::make_shared<test::Collector>();
  auto watch = std::make_shared<Watch>(1, WatchFilter{}, log);
  bus.subscribe(watch);
  auto writer_options = options;
  writer_options.etcd.endpoints = {etcd.endpoint(1), etcd.endpoint(2)};
  writer_options.etcd.timeout = std::chrono::milliseconds(1000);
  storage::EtcdClient probe(writer_options.etcd);
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
    claim(probe, options.prefix, slot, claims);
  }
  auto writer = open(writer_options, claims);

  REQUIRE(commit(*writer, {acquire("gap/0", 1)}).ok);
  wait_for([&] { return watcher->revision() == 1; });
  REQUIRE(watcher->revision() == 1);
  // Member 0 stops: the watcher's stream goes quiet while the writer commits far more than the
  // log keeps, so when the watcher moves its stream, the events after 1 that it reads start
  // above a trimmed stretch.
  etcd.stop(0);
  for (int t = 0; t < 5; ++t) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < 1000; ++i)
      ops.push_back(acquire("gap/" + std::to_string(t * 1000 + i + 1), 1));
    bool ok = false;
    wait_for([&] { return writer->healthy() && (ok = commit(*writer, ops).ok); });
    REQUIRE(ok);
  }
  REQUIRE(writer->oldest_revision() > 2);
  REQUIRE(log->events().size() == 1);  // not moved yet: the trimmed stretch is ahead of it
  // It moves its stream once a call to member 0 has timed out (10 s), then reads on from 2.
  std::optional<Revision> compacted = log->compacted(std::chrono::seconds(30));
  etcd.cont(0);
  INFO("watcher at " << watcher->revision() << ", writer at " << writer->revision() << ", oldest "
                     << writer->oldest_revision());
  REQUIRE(compacted.has_value());
  CHECK(*compacted > 2);
  CHECK(*compacted >= writer->oldest_revision());
  std::vector<Event> events = log->events();
  REQUIRE(events.size() == 1);  // nothing after the gap
  CHECK(events[0].revision == 1);
  CHECK(bus.subscribers() == 0);
}

TEST_CASE("a key with no row in a slot scanned under our claim loads without asking etcd",
          "[etcd_ledger]") {
  test::EtcdCluster etcd(1);
  auto options = options_for(etcd);
  options.etcd.timeout = std::chrono::milliseconds(300);
  storage::SlotClaims claims;
  storage::EtcdClient probe(options.etcd);
  claim(probe, options.prefix, 7, claims);
  claim(probe, options.prefix, 8, claims);
  auto ledger = open(options, claims);
  std::string before_scan = key_in(7, 0), after_scan = key_in(7, 1), never = key_in(7, 2);
  std::string uncertain = key_in(7, 3), unscanned = key_in(8, 0);
  REQUIRE(commit(*ledger, {acquire(before_scan, 1)}).ok);
  std::size_t live = 0;
  REQUIRE(ledger->scan_slot(7, [&](std::string, storage::LoadedState) { ++live; }).ok());
  CHECK(live == 1);
  REQUIRE(commit(*ledger, {acquire(after_scan, 1)}).ok);

  // With etcd silent, only what is known to have no row loads; every other key asks etcd.
  auto loads = [&](const std::string& key) {
    storage::LoadedState loaded;
    loaded.state.last_token = 99;
    bool ok = ledger->load(key, loaded).ok();
    if (ok) CHECK(loaded.state.last_token == 0);
    return ok;
  };
  etcd.stop(0);
  CHECK(loads(never));
  CHECK_FALSE(loads(before_scan));  // seen by the scan
  CHECK_FALSE(loads(after_scan));   // written since
  CHECK_FALSE(loads(unscanned));    // its slot was never scanned

  // A write whose answer never came may have landed: its key asks etcd from then on.
  CHECK_FALSE(commit(*ledger, {acquire(uncertain, 1)}).ok);
  CHECK_FALSE(loads(uncertain));
  etcd.cont(0);
  wait_for([&] { return ledger->healthy(); });
  storage::LoadedState landed;
  REQUIRE(ledger->load(uncertain, landed).ok());

  // Once the claim is another one (lost, and made again), the scan says nothing any more.
  claims.claim(7, claims.claim_revision(7).value() + 1'000);
  etcd.stop(0);
  CHECK_FALSE(loads(never));
  etcd.cont(0);
}

TEST_CASE("slots claimed together are fenced by one compare, and a lost one among them is found",
          "[etcd_ledger]") {
  test::EtcdCluster etcd(1);
  auto options = options_for(etcd);
  storage::SlotClaims claims;
  storage::EtcdClient probe(options.etcd);
  // As the writer does: three neighbouring slots in one transaction, one create revision.
  storage::EtcdTxn txn;
  for (std::uint32_t slot : {10u, 11u, 12u}) {
    char key[32];
    std::snprintf(key, sizeof key, "/t/slots/%03u", slot);
    txn.compare_create_revision(key, 0);
    txn.put(key, "node");
  }
  storage::EtcdTxnResult claimed;
  REQUIRE(probe.txn(txn, claimed).ok());
  REQUIRE(claimed.succeeded);
  for (std::uint32_t slot : {10u, 11u, 12u}) claims.claim(slot, claimed.revision);
  auto ledger = open(options, claims);
  std::vector<std::pair<std::uint32_t, std::int64_t>> lost;
  claims.set_lost_handler(
      [&](std::uint32_t slot, std::int64_t revision) { lost.emplace_back(slot, revision); });
  REQUIRE(commit(*ledger, {acquire(key_in(10), 1), acquire(key_in(12), 1)}).ok);
  CHECK(lost.empty());

  // Another node takes slot 11, which the next write does not touch: the run's compare fails on
  // it, slot 11 is found lost, and the write to 10 and 12 goes through on a second try.
  REQUIRE(probe.delete_range("/t/slots/011").ok());
  storage::SlotClaims thief;
  claim(probe, options.prefix, 11, thief);
  auto next = commit(*ledger, {release(key_in(10), 1), release(key_in(12), 1)});
  CHECK(next.ok);
  CHECK(lost == std::vector<std::pair<std::uint32_t, std::int64_t>>{{11, claimed.revision}});
  CHECK_FALSE(claims.owns(11));
  CHECK(claims.owns(10));
  CHECK(ledger->healthy());

  // The slot itself is fenced as before.
  CHECK_FALSE(commit(*ledger, {acquire(key_in(11), 1)}).ok);
  storage::LoadedState loaded;
  REQUIRE(ledger->load(key_in(11), loaded).ok());
  CHECK_FALSE(loaded.state.lease);
}
