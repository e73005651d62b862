// The listener's address (§7: loopback unless told otherwise) and who may open a WebSocket and
// mutate over it (§7: Origin, bearer token).
#include <unistd.h>

#include <catch2/catch.hpp>

#include "transports/listen_address.hpp"
#include "transports/upgrade_policy.hpp"

namespace tenure {

TEST_CASE("listen addresses are IP literals or localhost with a port", "[transport]") {
  std::string error;
  auto v4 = parse_listen_address("127.0.0.1:7420", error);
  REQUIRE(v4);
  CHECK(v4->endpoint.address().is_loopback());
  CHECK(v4->endpoint.port() == 7420);
  auto v6 = parse_listen_address("[::1]:0", error);
  REQUIRE(v6);
  CHECK(v6->endpoint.address().is_v6());
  CHECK(v6->host == "::1");
  auto named = parse_listen_address("localhost:80", error);
  REQUIRE(named);
  CHECK(named->endpoint.address().is_loopback());
  auto any = parse_listen_address("0.0.0.0:7420", error);
  REQUIRE(any);
  CHECK_FALSE(any->endpoint.address().is_loopback());
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:x", "::1:80",
                          "[127.0.0.1]:80", "example.com:80", ":80"}) {
    INFO(bad);
    error.clear();
    CHECK_FALSE(parse_listen_address(bad, error));
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("a WebSocket handshake's Origin must be the listener's or allowed", "[transport]") {
  auto origins = own_origins("127.0.0.1", 7420);
  origins.push_back("https://Ops.Example.com");
  UpgradePolicy policy("t", origins);
  CHECK(policy.origin_allowed(std::nullopt));  // not a browser
  CHECK(policy.origin_allowed("http://127.0.0.1:7420"));
  CHECK(policy.origin_allowed("http://localhost:7420"));
  CHECK(policy.origin_allowed("http://[::1]:7420"));
  CHECK(policy.origin_allowed("HTTP://LOCALHOST:7420"));
  CHECK(policy.origin_allowed("https://ops.example.com"));
  CHECK_FALSE(policy.origin_allowed("http://127.0.0.1:7421"));
  CHECK_FALSE(policy.origin_allowed("https://127.0.0.1:7420"));
  CHECK_FALSE(policy.origin_allowed("http://evil.example"));
  CHECK_FALSE(policy.origin_allowed("null"));
  CHECK_FALSE(policy.origin_allowed(""));
  CHECK(own_origins("::1", 80) ==
        std::vector<std::string>{"http://127.0.0.1", "http://[::1]", "http://localhost"});
}

TEST_CASE("only the server's bearer token makes a WebSocket client an admin", "[transport]") {
  UpgradePolicy policy("0123456789abcdef0123456789abcdef", {});
  Credentials granted = policy.credentials("Bearer 0123456789abcdef0123456789abcdef");
  CHECK(granted.admin);
  CHECK(granted.uid == ::geteuid());
  CHECK_FALSE(granted.unauthenticated);
  CHECK(policy.credentials("bearer  0123456789abcdef0123456789abcdef ").admin);
  for (std::optional<std::string_view> refused :
       {std::optional<std::string_view>(), std::optional<std::string_view>("Bearer "),
        std::optional<std::string_view>("Bearer 0123456789abcdef0123456789abcdeF"),
        std::optional<std::string_view>("Basic 0123456789abcdef0123456789abcdef"),
        std::optional<std::string_view>("Bearer 0123456789abcdef0123456789abcdef0")}) {
    Credentials c = policy.credentials(refused);
    CHECK_FALSE(c.admin);
    CHECK(c.unauthenticated);
  }
}

}  // namespace tenure
