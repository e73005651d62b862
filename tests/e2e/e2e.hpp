#pragma once
// Shared helpers for the end-to-end test cases.
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "tests/e2e/daemon.hpp"
#include "tests/e2e/json.hpp"
#include "tests/e2e/line_client.hpp"

namespace e2e {

using namespace std::chrono_literals;

// Polls pred every 10 ms until it holds or timeout passes; returns whether it held.
inline bool wait_until(const std::function<bool()>& pred, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

// Request bodies (the part after `"id":N,`).
inline std::string acquire_req(const std::string& key, const std::string& owner,
                               const std::string& extra = "") {
  std::string b = "\"op\":\"acquire\",\"key\":" + quote(key) + ",\"owner\":" + quote(owner);
  if (!extra.empty()) b += "," + extra;
  return b;
}
inline std::string renew_req(const std::string& key, const std::string& owner,
                             const std::string& extra = "") {
  std::string b = "\"op\":\"renew\",\"key\":" + quote(key) + ",\"owner\":" + quote(owner);
  if (!extra.empty()) b += "," + extra;
  return b;
}
inline std::string release_req(const std::string& key, const std::string& owner,
                               const std::string& extra = "") {
  std::string b = "\"op\":\"release\",\"key\":" + quote(key) + ",\"owner\":" + quote(owner);
  if (!extra.empty()) b += "," + extra;
  return b;
}
inline std::string get_req(const std::string& key) {
  return "\"op\":\"get\",\"key\":" + quote(key);
}
inline std::string history_req(const std::string& key, const std::string& extra = "") {
  std::string b = "\"op\":\"history\",\"key\":" + quote(key);
  if (!extra.empty()) b += "," + extra;
  return b;
}

// Checks a lease object (§3) field by field. ttl_ms 0 means open-ended (ttl_ms and expires_at
// null).
inline void check_lease_object(const Json& lease, const std::string& key, const std::string& owner,
                               std::uint64_t token, std::int64_t ttl_ms) {
  CHECK(lease.is_object());
  CHECK(lease["key"] == key);
  CHECK(lease["owner"] == owner);
  CHECK(lease["token"] == token);
  CHECK(time_ms(lease["acquired_at"]).has_value());
  if (ttl_ms == 0) {
    CHECK(lease["ttl_ms"] == nullptr);
    CHECK(lease["expires_at"] == nullptr);
  } else {
    CHECK(lease["ttl_ms"] == ttl_ms);
    CHECK(time_ms(lease["expires_at"]).has_value());
  }
}

// Checks an error reply: status error, the code, and a message naming `names` (when given).
inline void check_error(const Json& reply, const std::string& code, const std::string& names = "") {
  CHECK(reply["status"] == "error");
  CHECK(reply["error"] == code);
  CHECK(reply["message"].is_string());
  if (!names.empty()) {
    INFO("the message should name the field: " << names << "; reply: " << reply.source());
    CHECK(reply["message"].str().find(names) != std::string::npos);
  }
}

// The live lease of key (null Json when free), by `get`.
inline Json live_lease(LineClient& c, const std::string& key) {
  return c.call(get_req(key))["lease"];
}

// Waits (bounded) until `get` shows the key free.
inline bool wait_free(LineClient& c, const std::string& key, Millis timeout = 5000ms) {
  return wait_until([&] { return live_lease(c, key).is_null(); }, timeout);
}

// Waits (bounded) until `get` reports `waiters` waiters on key.
inline bool wait_waiters(LineClient& c, const std::string& key, std::uint64_t waiters,
                         Millis timeout = 5000ms) {
  return wait_until([&] { return c.call(get_req(key))["waiters"] == waiters; }, timeout);
}

// All history records of key, newest first, following `next`.
inline std::vector<Json> full_history(LineClient& c, const std::string& key) {
  std::vector<Json> out;
  std::string before;
  for (int page = 0; page < 1000; ++page) {
    Json r = c.call(history_req(key, "\"limit\":1000" + before));
    REQUIRE(r["status"] == "ok");
    for (std::size_t i = 0; i < r["tenures"].size(); ++i) out.push_back(r["tenures"][i]);
    if (r["next"].is_null()) return out;
    REQUIRE(r["next"].is_integer());
    before = ",\"before_token\":" + r["next"].dump();
  }
  FAIL("history paging did not end");
  return out;
}

}  // namespace e2e
