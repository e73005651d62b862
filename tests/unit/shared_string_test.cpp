#include "core/shared_string.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

namespace tenure {
namespace {

TEST_CASE("a shared string's copies refer to the one stored text", "[core]") {
  SharedString a("an owner name longer than any small string buffer");
  SharedString b = a;
  SharedString c;
  c = b;
  CHECK(b.data() == a.data());
  CHECK(c.data() == a.data());
  CHECK(c == "an owner name longer than any small string buffer");
  CHECK(c.size() == 49);
  SharedString moved = std::move(b);
  CHECK(moved.data() == a.data());
  CHECK(b.empty());  // NOLINT(bugprone-use-after-move): a moved-from string is empty
  CHECK(a != "another");
  CHECK(std::string("x") == SharedString("x"));
}

TEST_CASE("an empty shared string stores nothing and equals the empty string", "[core]") {
  SharedString none;
  SharedString from_empty("");
  CHECK(none.empty());
  CHECK(from_empty.empty());
  CHECK(none == "");
  CHECK(none.size() == 0);
}

TEST_CASE("copies of a shared string are made and dropped on several threads", "[core]") {
  SharedString text("shared across threads");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&text] {
      for (int i = 0; i < 100'000; ++i) {
        SharedString copy = text;
        if (copy != "shared across threads") FAIL("the text changed");
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(text == "shared across threads");
}

}  // namespace
}  // namespace tenure
