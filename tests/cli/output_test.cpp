// How tenure words replies and events that tell more than a bare lease (contract 1.1).
#include "apps/tenure/output.hpp"

#include <catch2/catch.hpp>

namespace tenure::cli {
namespace {

constexpr const char* kFuture = "2099-01-01T00:00:00.000Z";

}  // namespace

TEST_CASE("get shows the lock-delay instead of free", "[cli]") {
  Message reply(std::string(R"({"status":"ok","key":"k","lease":null,"last_token":3,)") +
                R"("waiters":0,"waiting":[],"lock_delay_until":")" + kFuture + R"("})");
  std::string out = describe_get(reply.fields());
  CHECK(out.rfind("k is in lock-delay after token 3 was lost: nobody may take it until ", 0) == 0);
  CHECK(out.find("free") == std::string::npos);
  // Once the lock-delay has passed, the key reads free again.
  Message past(R"({"status":"ok","key":"k","lease":null,"last_token":3,"waiters":0,)"
               R"("lock_delay_until":"2000-01-01T00:00:00.000Z"})");
  CHECK(describe_get(past.fields()) == "k is free (last token 3)");
}

TEST_CASE("get lists the waiters in queue order", "[cli]") {
  Message reply(std::string(R"({"status":"ok","key":"k","lease":{"key":"k","owner":"alice",)") +
                R"("token":1,"acquired_at":"2000-01-01T00:00:00.000Z","expires_at":")" + kFuture +
                R"(","ttl_ms":60000},"last_token":1,"waiters":2,"waiting":[)" +
                R"({"owner":"bob","since":"2000-01-01T00:00:00.000Z"},)" +
                R"({"owner":"carol","since":"2000-01-01T00:00:01.000Z"}]})");
  std::string out = describe_get(reply.fields());
  CHECK(out.rfind("k is held by alice, token 1", 0) == 0);
  CHECK(out.find(", 2 waiters\n  1. bob, waiting since ") != std::string::npos);
  CHECK(out.find("\n  2. carol, waiting since ") != std::string::npos);
}

TEST_CASE("a re-acquire says the lease was already yours", "[cli]") {
  Message reply(std::string(R"({"status":"acquired","fresh":false,"key":"pr/y","owner":"alice",)") +
                R"("token":4,"acquired_at":"2000-01-01T00:00:00.000Z","expires_at":")" + kFuture +
                R"(","ttl_ms":60000,"revision":9})");
  CHECK(describe_acquired(reply.fields())
            .rfind("pr/y was already yours (alice), token 4; renewed", 0) == 0);
}

TEST_CASE("history and watch show who revoked and why", "[cli]") {
  Message record(R"({"token":2,"owner":"alice","acquired_at":"2000-01-01T00:00:00.000Z",)"
                 R"("ended_at":"2000-01-01T00:00:01.000Z","end":"revoked","revoked_by":"uid:0",)"
                 R"("reason":"stuck deploy"})");
  CHECK(history_table({record.fields()}).find("revoked (by uid:0: stuck deploy)") !=
        std::string::npos);
  Message event(R"({"event":"revoked","watch_id":1,"revision":5,"key":"k","owner":"alice",)"
                R"("token":2,"at":"2000-01-01T00:00:01.000Z","expires_at":null,"by":"ws"})");
  std::string line = describe_event(event.fields());
  CHECK(line.find("revoked k by alice, token 2 (by ws)") != std::string::npos);
}

}  // namespace tenure::cli
