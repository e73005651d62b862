// kill -9 of tenured under concurrent load, restart, and check the durability promises of §6:
// every acknowledged acquire is still held, or was released (by an acknowledged release, or one
// in flight at the crash), or expired no earlier than its acknowledged deadline; no token went
// backwards or was reissued; the revision did not go backwards; history is intact.
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "tests/e2e/e2e.hpp"

using namespace e2e;

namespace {

constexpr int kKeys = 12;
constexpr int kThreads = 4;
// TENURE_CRASH_CYCLES=100 makes the long run; CI keeps the short one.
int crash_rounds() {
  const char* env = std::getenv("TENURE_CRASH_CYCLES");
  int n = env ? std::atoi(env) : 0;
  return n > 0 ? n : 3;
}

std::string key_name(int i) { return "crash/" + std::to_string(i); }

using TenureId = std::pair<std::string, std::uint64_t>;  // key, token

struct TenureAck {
  std::string owner;
  std::int64_t expires_ms = 0;  // the deadline of the last acknowledged acquire/renew
  bool release_acked = false;
};

struct Pending {
  std::string op;
  std::string key;
  std::string owner;
  bool used = false;  // matched to an unacknowledged tenure already
};

struct ThreadLog {
  std::map<TenureId, TenureAck> tenures;
  std::optional<Pending> pending;
  std::uint64_t max_revision = 0;
  std::vector<std::string> errors;
};

// One client: random acquire/renew/release on a few keys, one request at a time, recording what
// the daemon acknowledged. Runs until the connection dies.
void run_load(const std::string& socket, const std::string& owner, unsigned seed,
              const std::atomic<bool>& killing, std::atomic<int>& acked, ThreadLog& log) {
  std::mt19937 rng(seed);
  std::map<std::string, std::uint64_t> mine;  // keys this owner believes it holds
  std::optional<LineClient> c;
  try {
    c.emplace(socket);
    for (;;) {
      std::string key = key_name(static_cast<int>(rng() % kKeys));
      auto held = mine.find(key);
      unsigned dice = rng() % 10;
      std::string op = "acquire";
      if (held != mine.end()) op = dice < 4 ? "renew" : dice < 8 ? "release" : "acquire";
      std::int64_t ttl = (rng() % 2) ? 150 + static_cast<std::int64_t>(rng() % 350)
                                     : 300000 + static_cast<std::int64_t>(rng() % 300000);
      std::string ttl_field = "\"ttl_ms\":" + std::to_string(ttl);
      // Some acquires queue behind the holder, so crashes also land mid-hand-over.
      if (op == "acquire" && rng() % 4 == 0) {
        ttl_field += ",\"wait_ms\":" + std::to_string(50 + rng() % 250);
      }
      std::string body = op == "acquire" ? acquire_req(key, owner, ttl_field)
                         : op == "renew" ? renew_req(key, owner, ttl_field)
                                         : release_req(key, owner);
      log.pending = Pending{op, key, owner};
      Json r = c->call(body, 30000ms);
      log.pending.reset();
      ++acked;
      if (r["revision"].is_integer())
        log.max_revision = std::max(log.max_revision, r["revision"].u64());
      std::string status = r["status"].str();
      auto bad = [&] { log.errors.push_back(body + " -> " + r.source()); };
      if (op == "acquire" && status == "acquired") {
        std::uint64_t t = r["token"].u64();
        if (r["owner"] != owner || r["key"] != key || !time_ms(r["expires_at"])) bad();
        if (r["fresh"] == false && (held == mine.end() || held->second != t)) bad();
        auto& rec = log.tenures[{key, t}];
        rec.owner = owner;
        rec.expires_ms = time_ms(r["expires_at"]).value_or(0);  // this call's ttl counts
        mine[key] = t;
      } else if (op == "acquire" && status == "held") {
        if (r["holder"] == owner) bad();
        mine.erase(key);
      } else if (op == "renew" && status == "renewed") {
        std::uint64_t t = r["token"].u64();
        auto it = log.tenures.find({key, t});
        if (held == mine.end() || held->second != t || it == log.tenures.end()) {
          bad();
        } else {
          it->second.expires_ms = time_ms(r["expires_at"]).value_or(0);
        }
      } else if (op == "renew" && status == "not_holder") {
        mine.erase(key);
      } else if (op == "release" && status == "released") {
        if (!r["token"].is_null()) {
          std::uint64_t t = r["token"].u64();
          auto it = log.tenures.find({key, t});
          if (it == log.tenures.end()) {
            bad();
          } else {
            it->second.release_acked = true;
          }
        }
        mine.erase(key);
      } else if (op == "release" && status == "not_holder") {
        mine.erase(key);
      } else {
        bad();
      }
    }
  } catch (const std::exception& e) {
    if (!killing)
      log.errors.push_back(std::string("connection failed before the crash: ") + e.what());
  }
}

struct Knowledge {
  std::map<TenureId, TenureAck> acked;
  std::vector<Pending> pending;        // requests whose outcome is unknown (in flight at a crash)
  std::set<TenureId> unacked_tenures;  // tenures created by such requests, found so far
  std::set<TenureId> revoked;          // tenures ended by an acknowledged revoke
  std::map<std::string, std::vector<Json>> last_history;
  std::uint64_t max_revision = 0;
};

void verify_after_restart(Daemon& d, Knowledge& k, int round) {
  INFO("verification after crash " << round);
  auto c = d.connect();
  Json stats = c.call("\"op\":\"stats\"");
  CHECK(stats["revision"].u64() >= k.max_revision);

  // Leases whose time passed while the daemon was down are expired at start-up; give its timers a
  // bounded moment, until get and the newest history record agree on every key.
  auto consistent = [&](const std::string& key) {
    Json g = c.call(get_req(key));
    Json h = c.call(history_req(key, "\"limit\":1"));
    if (h["tenures"].size() == 0) return g["lease"].is_null();
    Json newest = h["tenures"][0];
    if (g["lease"].is_null()) return !newest["end"].is_null();
    return newest["end"].is_null() && newest["token"] == g["lease"]["token"].u64();
  };
  bool settled = wait_until(
      [&] {
        for (int i = 0; i < kKeys; ++i) {
          if (!consistent(key_name(i))) return false;
        }
        return true;
      },
      10000ms);
  CHECK(settled);

  std::int64_t now = wall_now_ms();
  std::uint64_t revision = c.call("\"op\":\"stats\"")["revision"].u64();
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = key_name(i);
    INFO("key " << key);
    Json g = c.call(get_req(key));
    REQUIRE(g["status"] == "ok");
    std::vector<Json> hist = full_history(c, key);
    std::uint64_t last = g["last_token"].u64();
    CHECK(revision >= last);

    // Tokens 1..last_token, newest first, every record there.
    REQUIRE(hist.size() == last);
    for (std::size_t j = 0; j < hist.size(); ++j) {
      const Json& t = hist[j];
      INFO("record " << t.dump());
      CHECK(t["token"] == last - j);
      CHECK(t["owner"].is_string());
      CHECK(time_ms(t["acquired_at"]).has_value());
      if (j > 0) CHECK_FALSE(t["end"].is_null());
      CHECK(t["end"].is_null() == t["ended_at"].is_null());
      if (k.revoked.count({key, last - j})) {
        CHECK(t["end"] == "revoked");
      } else {
        CHECK((t["end"].is_null() || t["end"] == "released" || t["end"] == "expired"));
      }
    }
    const Json& lease = g["lease"];
    if (!lease.is_null()) {
      REQUIRE_FALSE(hist.empty());
      CHECK(hist[0]["end"].is_null());
      CHECK(hist[0]["token"] == lease["token"].u64());
      CHECK(hist[0]["owner"] == lease["owner"].str());
      CHECK(time_ms(lease["expires_at"]).value_or(0) > now - 1000);
    }

    std::uint64_t max_acked = 0;
    for (const auto& [id, ack] : k.acked) {
      if (id.first == key) max_acked = std::max(max_acked, id.second);
    }
    CHECK(last >= max_acked);  // no token went backwards

    for (const Json& t : hist) {
      std::uint64_t token = t["token"].u64();
      INFO("record " << t.dump());
      std::string owner = t["owner"].str();
      std::string end = t["end"].is_null() ? "" : t["end"].str();
      auto pending = [&](std::string_view op) {
        for (const auto& p : k.pending) {
          if (p.op == op && p.key == key && p.owner == owner) return true;
        }
        return false;
      };
      bool pending_release = pending("release");
      // An acquire or renew in flight at a crash may have moved the deadline either way.
      bool deadline_known = !pending("acquire") && !pending("renew");
      auto it = k.acked.find({key, token});
      if (it != k.acked.end()) {
        const TenureAck& ack = it->second;
        CHECK(owner == ack.owner);
        if (ack.release_acked) CHECK(end == "released");
        if (end == "expired" && deadline_known) {
          // Expired on time: not before the deadline the owner was last given.
          CHECK(time_ms(t["ended_at"]).value_or(0) >= ack.expires_ms);
        }
        if (end == "released" && !ack.release_acked) CHECK(pending_release);
        if (end.empty() && deadline_known && lease["token"] == token) {
          CHECK(time_ms(lease["expires_at"]).value_or(0) == ack.expires_ms);
        }
        // Still held: an acknowledged lease with time left, not released, is live.
        if (!ack.release_acked && !pending_release && deadline_known &&
            !k.revoked.count({key, token}) && ack.expires_ms > now + 1000) {
          CHECK(end.empty());
          CHECK(lease["token"] == token);
          CHECK(lease["owner"] == ack.owner);
        }
      } else if (!k.unacked_tenures.count({key, token})) {
        // Never acknowledged: only an acquire in flight at a crash can have made it.
        bool matched = false;
        for (auto& p : k.pending) {
          if (!p.used && p.op == "acquire" && p.key == key && p.owner == owner) {
            p.used = true;
            matched = true;
            break;
          }
        }
        if (!matched) {
          FAIL_CHECK("tenure " << token << " of " << key << " (owner " << owner
                               << ") was never acknowledged and no acquire was in flight");
        }
        k.unacked_tenures.insert({key, token});
      }
      // An unacknowledged tenure's owner is gone: nobody could have released it.
      if (k.unacked_tenures.count({key, token})) CHECK(end != "released");
    }

    // History intact: every record seen after the previous crash is unchanged (an open one may
    // have ended since).
    for (const Json& old : k.last_history[key]) {
      std::uint64_t token = old["token"].u64();
      INFO("earlier record " << old.dump());
      REQUIRE(token >= 1);
      REQUIRE(token <= hist.size());
      const Json& now_rec = hist[hist.size() - token];
      CHECK(now_rec["owner"] == old["owner"].str());
      CHECK(now_rec["acquired_at"] == old["acquired_at"].str());
      if (!old["end"].is_null()) {
        CHECK(now_rec["end"] == old["end"].str());
        CHECK(now_rec["ended_at"] == old["ended_at"].str());
      }
    }
    k.last_history[key] = hist;
  }
  k.max_revision = std::max(k.max_revision, revision);
}

}  // namespace

TEST_CASE("kill -9 under concurrent acquire/renew/release load loses nothing acknowledged",
          "[e2e][crash]") {
  Daemon d;  // --sync always, the default
  Knowledge k;
  std::mt19937 rng(std::random_device{}());
  const int rounds = crash_rounds();
  for (int round = 1; round <= rounds; ++round) {
    INFO("round " << round);
    std::atomic<bool> killing{false};
    std::atomic<int> acked{0};
    std::vector<ThreadLog> logs(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      std::string owner = "r" + std::to_string(round) + "-t" + std::to_string(t);
      threads.emplace_back(run_load, d.socket_path(), owner, static_cast<unsigned>(rng()),
                           std::cref(killing), std::ref(acked), std::ref(logs[t]));
    }
    int target = 200 + static_cast<int>(rng() % 600);
    bool loaded = wait_until([&] { return acked.load() >= target; }, 120000ms);
    killing = true;
    d.kill9();
    for (auto& th : threads) th.join();
    INFO("acknowledged operations: " << acked.load());
    CHECK(loaded);

    for (auto& log : logs) {
      for (const auto& e : log.errors) FAIL_CHECK("during the load: " << e);
      for (const auto& [id, ack] : log.tenures) k.acked[id] = ack;
      if (log.pending) k.pending.push_back(*log.pending);
      k.max_revision = std::max(k.max_revision, log.max_revision);
    }

    std::size_t in_flight = 0;
    for (auto& log : logs) in_flight += log.pending ? 1 : 0;
    std::cout << "crash round " << round << ": " << acked.load() << " acknowledged requests, "
              << k.acked.size() << " acknowledged tenures so far, " << in_flight
              << " requests in flight at the kill\n";

    d.start();
    // Let every short lease (ttl <= 500 ms) run out, so what is live is decided.
    std::this_thread::sleep_for(700ms);
    verify_after_restart(d, k, round);

    // Free the keys that dead owners still hold, so the next round has keys to fight over.
    auto admin = d.connect();
    for (int i = 0; i < kKeys; ++i) {
      Json r = admin.call("\"op\":\"revoke\",\"key\":" + quote(key_name(i)));
      if (r["status"] == "revoked") {
        k.revoked.insert({key_name(i), r["token"].u64()});
        k.max_revision = std::max(k.max_revision, r["revision"].u64());
      } else {
        CHECK(r["status"] == "not_holder");
      }
    }
  }

  // And the keys stay usable: the next tenure of each gets the next token.
  auto c = d.connect();
  for (int i = 0; i < kKeys; ++i) {
    Json g = c.call(get_req(key_name(i)));
    if (!g["lease"].is_null()) continue;
    Json r = c.call(acquire_req(key_name(i), "after-crash", "\"ttl_ms\":30000"));
    CHECK(r["status"] == "acquired");
    CHECK(r["token"] == g["last_token"].u64() + 1);
  }
}
