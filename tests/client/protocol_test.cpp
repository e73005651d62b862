// protocol/: requests formatted per op (and refused with a field the op does not define), replies
// and events read into values, without sockets.
#include <catch2/catch.hpp>

#include "protocol/replies.hpp"
#include "protocol/request.hpp"

using namespace tenure::protocol;

namespace {

Message parse(std::string line) {
  auto m = Message::parse(std::move(line));
  REQUIRE(m);
  return std::move(*m);
}

}  // namespace

TEST_CASE("every op formats to its contract line", "[protocol]") {
  Request acquire{.op = Op::acquire, .key = "pr/1", .owner = "o"};
  acquire.ttl_ms = 1500;
  acquire.wait_ms = 0;
  acquire.release_on_disconnect = true;
  CHECK(format(7, acquire) ==
        R"({"id":7,"op":"acquire","key":"pr/1","owner":"o","ttl_ms":1500,"wait_ms":0,)"
        R"("release_on_disconnect":true})");
  Request renew{.op = Op::renew, .key = "k", .owner = "o"};
  renew.token = 3;
  CHECK(format(1, renew) == R"({"id":1,"op":"renew","key":"k","owner":"o","token":3})");
  Request watch{.op = Op::watch, .prefix = "pr/"};
  watch.from_revision = 9;
  CHECK(format(2, watch) == R"({"id":2,"op":"watch","prefix":"pr/","from_revision":9})");
  CHECK(format(3, Request{.op = Op::ping}) == R"({"id":3,"op":"ping"})");
  Request revoke{.op = Op::revoke, .key = "k\"\n", .reason = "why"};
  CHECK(format(4, revoke) == R"({"id":4,"op":"revoke","key":"k\"\n","reason":"why"})");
  for (std::size_t i = 0; i < kOpCount; ++i) {
    Op op = static_cast<Op>(i);
    CHECK(parse_op(to_string(op)) == op);
  }
}

TEST_CASE("a field the op does not define is caught before sending", "[protocol]") {
  Request get{.op = Op::get, .key = "k"};
  CHECK_FALSE(undefined_field(get));
  get.ttl_ms = 5;
  CHECK(undefined_field(get) == Field::ttl_ms);
  Request keepalive{.op = Op::keepalive, .key = "k", .owner = "o"};
  CHECK(undefined_field(keepalive) == Field::key);
  Request release{.op = Op::release, .key = "k", .owner = "o"};
  release.open_ended = true;
  CHECK(undefined_field(release) == Field::open_ended);
  CHECK(defines(Op::check, Field::owner));
  CHECK_FALSE(defines(Op::stats, Field::key));
}

TEST_CASE("replies read into values; held, not_holder and errors into failures", "[protocol]") {
  auto acquired = read_acquired(parse(
      R"({"id":1,"status":"acquired","fresh":false,"key":"k","owner":"o","token":4,)"
      R"("acquired_at":"2026-11-30T03:55:33.123Z","expires_at":null,"ttl_ms":null,"revision":12})"));
  REQUIRE(acquired);
  CHECK(acquired->token == 4);
  CHECK_FALSE(acquired->fresh);
  CHECK(acquired->acquired_at == 1796010933123);
  CHECK_FALSE(acquired->expires_at);
  CHECK_FALSE(acquired->ttl_ms);
  CHECK(acquired->revision == 12);

  auto held = read_acquired(
      parse(R"({"id":2,"status":"held","key":"k","holder":"a","token":4,"expires_at":null})"));
  REQUIRE_FALSE(held);
  CHECK(held.error().is(client_errc::held));
  CHECK(held.error().holder == "a");
  CHECK(held.error().token == 4u);

  auto not_holder = read_renewed(
      parse(R"({"status":"not_holder","key":"k","reason":"expired","holder":null,"token":null})"));
  REQUIRE_FALSE(not_holder);
  CHECK(not_holder.error().is(client_errc::not_holder));
  CHECK(not_holder.error().reason == "expired");

  auto error = read_stats(
      parse(R"({"id":3,"status":"error","error":"forbidden","message":"uid 5 may not revoke"})"));
  REQUIRE_FALSE(error);
  CHECK(error.error().is(client_errc::forbidden));
  CHECK(error.error().message == "forbidden: uid 5 may not revoke");
  CHECK(error.error().code.message() == "forbidden");

  auto wrong = read_released(parse(R"({"id":4,"status":"pong"})"));
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().is(client_errc::malformed_reply));

  auto page = read_history_page(parse(
      R"({"status":"ok","tenures":[{"token":2,"owner":"b","acquired_at":"2026-11-30T03:55:33Z",)"
      R"("ended_at":null,"end":null},{"token":1,"owner":"a","acquired_at":null,)"
      R"("ended_at":null,"end":"revoked","revoked_by":"uid:0","reason":"x"}],"next":1})"));
  REQUIRE(page);
  REQUIRE(page->tenures.size() == 2);
  CHECK(page->tenures[1].end == "revoked");
  CHECK(page->tenures[1].revoked_by == "uid:0");
  CHECK(page->next == 1u);

  auto key =
      read_key_info(parse(R"({"status":"ok","key":"k","lease":null,"last_token":3,"waiters":1,)"
                          R"("waiting":[{"owner":"w","since":"2026-11-30T03:55:33.000Z"}]})"));
  REQUIRE(key);
  CHECK_FALSE(key->lease);
  CHECK(key->last_token == 3);
  REQUIRE(key->waiting.size() == 1);
  CHECK(key->waiting[0].owner == "w");
}

TEST_CASE("events and lost notices read into values", "[protocol]") {
  auto event = read_event(
      parse(R"({"event":"revoked","watch_id":1,"revision":8,"key":"k","owner":"o","token":2,)"
            R"("at":"2026-11-30T03:55:33.123Z","expires_at":null,"by":"uid:0","reason":"r"})"));
  REQUIRE(event);
  CHECK(event->type == "revoked");
  CHECK(event->revision == 8);
  CHECK(event->by == "uid:0");
  auto lost = read_lost(
      parse(R"({"event":"lost","key":"k","token":2,"reason":"expired","at":null,"revision":9})"));
  REQUIRE(lost);
  CHECK(lost->reason == "expired");
  CHECK_FALSE(read_event(parse(R"({"status":"ok"})")));
  CHECK(parse_time("2026-11-30T03:55:33Z") == 1796010933000);
  CHECK_FALSE(parse_time("2026-11-30 03:55:33Z"));
}
