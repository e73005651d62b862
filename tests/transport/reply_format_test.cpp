// Replies as the contract spells them (§3): field names, nulls, and what is left out.
#include "transports/reply_format.hpp"

#include <catch2/catch.hpp>

#include "protocol/ops.hpp"

namespace tenure {
namespace {

constexpr Millis kT0 = 1'700'000'000'000;  // 2023-11-14T22:13:20.000Z

Lease lease(Millis ttl = 5000) {
  Lease l;
  l.owner = "o1";
  l.token = 7;
  l.acquired_at = kT0;
  l.expires_at = kT0 + ttl;
  l.ttl_ms = ttl;
  return l;
}

Lease open_ended_lease() {
  Lease l = lease();
  l.expires_at.reset();
  l.ttl_ms = 0;
  return l;
}

template <typename Result>
std::string formatted(ReplyOutcome (*format)(std::string&, std::string_view, const Result&),
                      const Result& result, std::string_view id = "1") {
  std::string out;
  format(out, id, result);
  return out;
}

HolderResult holder_result(HolderStatus status) {
  HolderResult r;
  r.status = status;
  r.key = "k";
  return r;
}

}  // namespace

TEST_CASE("acquired flattens the lease into the reply", "[transport]") {
  AcquireResult r;
  r.status = AcquireStatus::acquired;
  r.fresh = true;
  r.key = "k";
  r.lease = lease();
  r.revision = 42;
  CHECK(formatted(&format_acquire, r, R"("a")") ==
        R"({"id":"a","status":"acquired","fresh":true,"key":"k","owner":"o1","token":7,)"
        R"("acquired_at":"2023-11-14T22:13:20.000Z","expires_at":"2023-11-14T22:13:25.000Z",)"
        R"("ttl_ms":5000,"revision":42})");
  r.lease = open_ended_lease();
  CHECK_THAT(formatted(&format_acquire, r, ""),
             Catch::Contains(R"("expires_at":null,"ttl_ms":null)") &&
                 Catch::StartsWith(R"({"status":"acquired")"));
}

TEST_CASE("held names the holder, or the lock-delay and the last token", "[transport]") {
  AcquireResult r;
  r.status = AcquireStatus::held;
  r.key = "k";
  r.lease = lease();
  CHECK(formatted(&format_acquire, r) ==
        R"({"id":1,"status":"held","key":"k","holder":"o1","token":7,)"
        R"("expires_at":"2023-11-14T22:13:25.000Z"})");
  r.status = AcquireStatus::lock_delay;
  r.lease.reset();
  r.last_token = 7;
  r.retry_after_ms = 1500;
  CHECK(formatted(&format_acquire, r) ==
        R"({"id":1,"status":"held","key":"k","reason":"lock_delay","retry_after_ms":1500,)"
        R"("holder":null,"token":7,"expires_at":null})");
}

TEST_CASE("engine errors become error replies with their code", "[transport]") {
  AcquireResult r;
  r.error = Error{errc::forbidden, "not yours"};
  CHECK(formatted(&format_acquire, r) ==
        R"({"id":1,"status":"error","error":"forbidden","message":"not yours"})");
  HolderResult h = holder_result(HolderStatus::ok);
  h.error = Error{errc::unavailable, "stopping"};
  CHECK_THAT(formatted(&format_renew, h), Catch::Contains(R"("error":"unavailable")"));
}

TEST_CASE("not_holder describes the live lease or says null", "[transport]") {
  HolderResult r = holder_result(HolderStatus::not_holder);
  r.reason = NotHolderReason::held_by_other;
  r.lease = lease();
  CHECK(formatted(&format_renew, r) ==
        R"({"id":1,"status":"not_holder","key":"k","reason":"held_by_other","holder":"o1",)"
        R"("token":7})");
  r.reason = NotHolderReason::expired;
  r.lease.reset();
  CHECK(formatted(&format_check, r) ==
        R"({"id":1,"status":"not_holder","key":"k","reason":"expired","holder":null,)"
        R"("token":null})");
}

TEST_CASE("release reports a revision only when it ended a tenure", "[transport]") {
  HolderResult r = holder_result(HolderStatus::ok);
  r.token = 7;
  r.revision = 9;
  CHECK(formatted(&format_release, r) ==
        R"({"id":1,"status":"released","key":"k","token":7,"revision":9})");
  HolderResult idempotent = holder_result(HolderStatus::noop);
  idempotent.revision = 9;
  CHECK(formatted(&format_release, idempotent) ==
        R"({"id":1,"status":"released","key":"k","token":null})");
}

TEST_CASE("renew, revoke and check", "[transport]") {
  HolderResult r = holder_result(HolderStatus::ok);
  r.lease = lease();
  r.token = 7;
  r.revision = 11;
  CHECK_THAT(formatted(&format_renew, r),
             Catch::StartsWith(R"({"id":1,"status":"renewed","key":"k","owner":"o1","token":7,)") &&
                 Catch::EndsWith(R"("ttl_ms":5000,"revision":11})"));
  CHECK(formatted(&format_revoke, r) ==
        R"({"id":1,"status":"revoked","key":"k","token":7,"revision":11})");
  CHECK(formatted(&format_check, r) ==
        R"({"id":1,"status":"valid","expires_at":"2023-11-14T22:13:25.000Z"})");
}

TEST_CASE("get, list and history", "[transport]") {
  GetResult get;
  get.key = "k";
  get.last_token = 3;
  CHECK(formatted(&format_get, get) ==
        R"({"id":1,"status":"ok","key":"k","lease":null,"last_token":3,"waiters":0,)"
        R"("waiting":[]})");
  get.waiters = 2;
  get.waiting = {{"w1", kT0}, {"w2", kT0 + 5}};
  get.lock_delay_until = kT0 + 100;
  CHECK(formatted(&format_get, get) ==
        R"({"id":1,"status":"ok","key":"k","lease":null,"last_token":3,"waiters":2,)"
        R"("waiting":[{"owner":"w1","since":"2023-11-14T22:13:20.000Z"},)"
        R"({"owner":"w2","since":"2023-11-14T22:13:20.005Z"}],)"
        R"("lock_delay_until":"2023-11-14T22:13:20.100Z"})");

  ListResult list;
  list.leases.push_back(ListedLease{"a", lease()});
  list.next = "a";
  CHECK_THAT(formatted(&format_list, list),
             Catch::StartsWith(R"({"id":1,"status":"ok","leases":[{"key":"a","owner":"o1",)") &&
                 Catch::EndsWith(R"("ttl_ms":5000}],"next":"a"})"));

  HistoryResult history;
  history.tenures.push_back(TenureRecord{8, "o2", kT0, std::nullopt, std::nullopt, {}});
  history.tenures.push_back(TenureRecord{7, "o1", kT0, kT0 + 1, EndReason::expired, {}});
  history.tenures.push_back(TenureRecord{6, "o1", kT0, kT0, EndReason::revoked, {"ws", ""}});
  CHECK(formatted(&format_history, history) ==
        R"({"id":1,"status":"ok","tenures":[)"
        R"({"token":8,"owner":"o2","acquired_at":"2023-11-14T22:13:20.000Z","ended_at":null,)"
        R"("end":null},)"
        R"({"token":7,"owner":"o1","acquired_at":"2023-11-14T22:13:20.000Z",)"
        R"("ended_at":"2023-11-14T22:13:20.001Z","end":"expired"},)"
        R"({"token":6,"owner":"o1","acquired_at":"2023-11-14T22:13:20.000Z",)"
        R"("ended_at":"2023-11-14T22:13:20.000Z","end":"revoked","revoked_by":"ws",)"
        R"("reason":null}],"next":null})");
}

TEST_CASE("lost events, pong and stats", "[transport]") {
  Event e{EventType::revoked, "k", "o1", 7, kT0, std::nullopt, 12, {"uid:0", "stuck"}};
  std::string out;
  format_lost(out, e);
  CHECK(out == R"({"event":"lost","key":"k","token":7,"reason":"revoked",)"
               R"("at":"2023-11-14T22:13:20.000Z","by":"uid:0","revoke_reason":"stuck",)"
               R"("revision":12})");
  out.clear();
  e.type = EventType::expired;
  e.revocation = {};
  format_lost(out, e);
  CHECK(out == R"({"event":"lost","key":"k","token":7,"reason":"expired",)"
               R"("at":"2023-11-14T22:13:20.000Z","revision":12})");
  out.clear();
  format_pong(out, "");
  CHECK(out == R"({"status":"pong"})");
  out.clear();
  EngineStats engine;
  engine.revision = 5;
  engine.ops[static_cast<std::size_t>(protocol::Op::acquire)] = 3;
  format_stats(out, "", ServerStats{"1.2.3", 10, 2, 0}, engine);
  CHECK_THAT(out, Catch::StartsWith(R"({"status":"ok","version":"1.2.3","uptime_ms":10,)"
                                    R"("revision":5,"live_leases":0,"keys":0,"connections":2,)"
                                    R"("watchers":0,"ops":{"acquire":3,)"));
  CHECK(out.find("cluster") == std::string::npos);  // a single node has none
}

TEST_CASE("a lost notice and a watch event escape their strings and follow what is there",
          "[transport]") {
  // Strings at their longest escaped form (every byte as \u00XX), after a line already in the
  // buffer: each line is written into room for its longest form and cut to size.
  const std::string worst(600, '\x01');
  std::string escaped;
  for (std::size_t i = 0; i < worst.size(); ++i) escaped += "\\u0001";
  Event e{EventType::revoked, worst,        SharedString(worst), ~Token{0}, kT0,
          kT0 + 5000,         ~Revision{0}, {worst, worst}};
  std::string out = "before\n";
  format_lost(out, e);
  CHECK(out ==
        "before\n"
        R"({"event":"lost","key":")" +
            escaped +
            R"(","token":18446744073709551615,"reason":"revoked",)"
            R"("at":"2023-11-14T22:13:20.000Z","by":")" +
            escaped + R"(","revoke_reason":")" + escaped + R"(","revision":18446744073709551615})");
  out = "before\n";
  format_event(out, ~std::uint64_t{0}, e);
  CHECK(out ==
        "before\n"
        R"({"event":"revoked","watch_id":18446744073709551615,)"
        R"("revision":18446744073709551615,"key":")" +
            escaped + R"(","owner":")" + escaped +
            R"(","token":18446744073709551615,"at":"2023-11-14T22:13:20.000Z",)"
            R"("expires_at":"2023-11-14T22:13:25.000Z","by":")" +
            escaped + R"(","reason":")" + escaped + R"("})");
  // A quote and a backslash; a revoke without a reason; a time out of RFC 3339's years.
  e = Event{EventType::revoked, "a\"b", SharedString("o\\"), 1, -62'198'755'200'001,
            std::nullopt,       2,      {"ws", ""}};
  out.clear();
  format_lost(out, e);
  CHECK(out == R"({"event":"lost","key":"a\"b","token":1,"reason":"revoked",)"
               R"("at":"-62198755200001ms","by":"ws","revoke_reason":null,"revision":2})");
  out.clear();
  format_event(out, 3, e);
  CHECK(out == R"({"event":"revoked","watch_id":3,"revision":2,"key":"a\"b","owner":"o\\",)"
               R"("token":1,"at":"-62198755200001ms","expires_at":null,"by":"ws","reason":null})");
}

TEST_CASE("a cluster node's stats name it, the live nodes and its slots", "[transport]") {
  struct View final : ClusterView {
    const std::string& node_id() const override { return id; }
    std::string owner(std::uint32_t slot) const override { return slot < 3 ? id : "n2"; }
    std::vector<Node> nodes() const override {
      return {{"n1", "127.0.0.1:7521"}, {"n2", "127.0.0.1:7522"}};
    }
    std::string secret() const override { return {}; }
    std::chrono::milliseconds claim_wait() const override { return {}; }
    std::string id = "n1";
  } view;
  std::string out;
  format_stats(out, "", ServerStats{"1.2.3", 10, 2, 0, &view}, EngineStats{});
  CHECK_THAT(out, Catch::EndsWith(R"(},"cluster":{"node_id":"n1","nodes":[)"
                                  R"({"id":"n1","peer":"127.0.0.1:7521"},)"
                                  R"({"id":"n2","peer":"127.0.0.1:7522"}],"slots_owned":3}})"));
}

TEST_CASE("watch replies and the messages of a watch", "[transport]") {
  std::string out;
  CHECK(format_watching(out, "4", 9, 120).status == ReplyStatus::watching);
  CHECK(out == R"({"id":4,"status":"watching","watch_id":9,"revision":120})");
  out.clear();
  format_unwatched(out, "", 9);
  CHECK(out == R"({"status":"unwatched","watch_id":9})");
  out.clear();
  format_event(out, 9, Event{EventType::renewed, "k", "o1", 7, kT0, kT0 + 5000, 121, {}});
  CHECK(out == R"({"event":"renewed","watch_id":9,"revision":121,"key":"k","owner":"o1",)"
               R"("token":7,"at":"2023-11-14T22:13:20.000Z",)"
               R"("expires_at":"2023-11-14T22:13:25.000Z"})");
  out.clear();
  format_event(out, 9, Event{EventType::acquired, "k", "o1", 8, kT0, std::nullopt, 122, {}});
  CHECK_THAT(out, Catch::EndsWith(R"("expires_at":null})"));
  out.clear();
  format_event(out, 9,
               Event{EventType::revoked, "k", "o1", 8, kT0, std::nullopt, 123, {"uid:7", "why"}});
  CHECK_THAT(out, Catch::EndsWith(R"("expires_at":null,"by":"uid:7","reason":"why"})"));
  out.clear();
  format_lagged(out, 9, 123);
  CHECK(out == R"({"event":"lagged","watch_id":9,"resume_from":123})");
  out.clear();
  format_compacted(out, 9, 50);
  CHECK(out == R"({"event":"compacted","watch_id":9,"oldest_revision":50})");
}

TEST_CASE("each reply says what it was, for the metrics", "[transport]") {
  std::string out;
  ReplyOutcome error = format_error(out, "", Error{errc::unauthenticated, "no"});
  CHECK(error.status == ReplyStatus::error);
  CHECK(error.error == errc::unauthenticated);
  HolderResult refused = holder_result(HolderStatus::forbidden);
  CHECK(format_renew(out, "", refused).error == errc::forbidden);
  CHECK(format_release(out, "", holder_result(HolderStatus::not_holder)).status ==
        ReplyStatus::not_holder);
  AcquireResult held;
  held.key = "k";
  CHECK(format_acquire(out, "", held).status == ReplyStatus::held);
  CHECK(to_string(ReplyStatus::not_holder) == "not_holder");
}

}  // namespace tenure
