// The fencing checker against made-up replies: it must catch what the cluster tests rely on it to
// catch (a checker that cannot fail would prove nothing).
#include <catch2/catch.hpp>

#include "tests/cluster/fencing.hpp"

namespace cluster {
namespace {

e2e::Json parse(const std::string& text) { return *e2e::Json::parse(text); }

std::string acquired(const std::string& key, const std::string& owner, int token, int revision,
                     const std::string& at, const std::string& until, bool fresh = true) {
  return R"({"status":"acquired","fresh":)" + std::string(fresh ? "true" : "false") +
         R"(,"key":")" + key + R"(","owner":")" + owner + R"(","token":)" + std::to_string(token) +
         R"(,"acquired_at":"2099-12-01T00:00:)" + at + R"(Z","expires_at":"2099-12-01T00:00:)" +
         until + R"(Z","ttl_ms":1000,"revision":)" + std::to_string(revision) + "}";
}

std::string released(const std::string& key, int token, int revision) {
  return R"({"status":"released","key":")" + key + R"(","token":)" + std::to_string(token) +
         R"(,"revision":)" + std::to_string(revision) + "}";
}

TEST_CASE("the fencing checker passes tenures one after another", "[cluster][checker]") {
  FencingChecker checker;
  Sequence s{"client"};
  checker.on_reply(parse(acquired("k", "a", 1, 1, "01.000", "02.000")), &s);
  checker.on_reply(parse(released("k", 1, 2)), &s);
  checker.on_reply(parse(acquired("k", "b", 2, 3, "01.500", "02.500")), &s);
  // Expired, then taken: the deadline passed before the grant.
  checker.on_reply(parse(acquired("k", "c", 3, 5, "02.500", "03.500")), &s);
  CHECK(checker.verify().empty());
  CHECK(checker.grants() == 3);
  CHECK(checker.max_revision() == 5);
  CHECK(checker.live_at(e2e::parse_time_ms("2099-12-01T00:00:03.000Z").value()).size() == 1);
}

TEST_CASE("the fencing checker catches overlapping holds", "[cluster][checker]") {
  FencingChecker checker;
  checker.on_reply(parse(acquired("k", "a", 1, 1, "01.000", "05.000")));
  checker.on_reply(parse(acquired("k", "b", 2, 2, "03.000", "04.000")));
  auto v = checker.verify();
  REQUIRE(v.size() == 1);
  CHECK(v[0].find("overlapping holds") != std::string::npos);
}

TEST_CASE("the fencing checker counts a renewal's deadline", "[cluster][checker]") {
  FencingChecker checker;
  checker.on_reply(parse(acquired("k", "a", 1, 1, "01.000", "02.000")));
  checker.on_reply(parse(acquired("k", "a", 1, 2, "01.500", "03.000", false)));
  checker.on_reply(parse(acquired("k", "b", 2, 3, "02.500", "03.500")));
  CHECK(checker.verify().size() == 1);
}

TEST_CASE("the fencing checker catches a double grant and a token out of order",
          "[cluster][checker]") {
  FencingChecker checker;
  checker.on_reply(parse(acquired("k", "a", 1, 1, "01.000", "02.000")));
  checker.on_reply(parse(acquired("k", "b", 1, 2, "03.000", "04.000")));
  checker.on_reply(parse(acquired("j", "a", 5, 9, "01.000", "02.000")));
  checker.on_reply(parse(acquired("j", "b", 6, 8, "03.000", "04.000")));
  auto v = checker.verify();
  REQUIRE(v.size() == 2);
  CHECK(v[0].find("double grant") != std::string::npos);
  CHECK(v[1].find("out of revision order") != std::string::npos);
}

TEST_CASE("the fencing checker catches a revision used twice or going back", "[cluster][checker]") {
  FencingChecker checker;
  Sequence s{"client"};
  checker.on_reply(parse(acquired("k", "a", 1, 7, "01.000", "02.000")), &s);
  checker.on_reply(parse(acquired("j", "a", 1, 7, "01.000", "02.000")));
  checker.on_reply(parse(acquired("i", "a", 1, 6, "01.000", "02.000")), &s);
  auto v = checker.verify();
  REQUIRE(v.size() == 2);
  CHECK(v[0].find("two changes") != std::string::npos);
  CHECK(v[1].find("went back") != std::string::npos);
}

TEST_CASE("the fencing checker accepts a grant after a release was sent", "[cluster][checker]") {
  FencingChecker checker;
  checker.on_reply(parse(acquired("k", "a", 1, 1, "01.000", "59.000")));
  checker.release_sent("k", 1);  // its reply lost: the tenure may have ended now
  checker.on_reply(parse(acquired("k", "b", 2, 2, "02.000", "03.000")));
  CHECK(checker.verify().empty());
  CHECK(checker.live_at(0).size() == 1);  // only b's: a's ended when its release was sent
}

}  // namespace
}  // namespace cluster
