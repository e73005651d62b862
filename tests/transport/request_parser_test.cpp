// The wire's request rules (§2, §3): ids echoed as sent, null as absent, and bad_request naming
// the field for everything malformed, mistyped or contradictory.
#include "transports/request_parser.hpp"

#include <catch2/catch.hpp>

#include "transports/field_checks.hpp"

namespace tenure {
namespace {

ParsedRequest parse(std::string_view line) {
  static RequestParser parser;
  return parser.parse(line);
}

template <typename Body>
Body body_of(std::string_view line) {
  ParsedRequest parsed = parse(line);
  INFO(line);
  REQUIRE(std::holds_alternative<RequestBody>(parsed.body));
  const auto& body = std::get<RequestBody>(parsed.body);
  REQUIRE(std::holds_alternative<Body>(body));
  return std::get<Body>(body);
}

// The bad_request message of `line`, which must be refused.
std::string refusal(std::string_view line) {
  ParsedRequest parsed = parse(line);
  INFO(line);
  REQUIRE(std::holds_alternative<Error>(parsed.body));
  const Error& error = std::get<Error>(parsed.body);
  CHECK(error.code == errc::bad_request);
  return error.message;
}

}  // namespace

TEST_CASE("an id is echoed as the JSON the client sent", "[transport]") {
  CHECK(parse(R"({"id":7,"op":"ping"})").id == "7");
  CHECK(parse(R"({"op":"ping","id":-3})").id == "-3");
  CHECK(parse(R"({"id":"a\u0041 b" ,"op":"ping"})").id == R"("a\u0041 b")");
  CHECK(parse(R"({"id":18446744073709551615,"op":"ping"})").id == "18446744073709551615");
  CHECK(parse(R"({"op":"ping"})").id.empty());
  CHECK(parse(R"({"id":null,"op":"ping"})").id.empty());
  // Even a refused request keeps its id, so the client can match the error.
  CHECK(parse(R"({"id":"x","op":"nope"})").id == R"("x")");
  for (auto line :
       {R"({"id":1.5,"op":"ping"})", R"({"id":[1],"op":"ping"})", R"({"id":true,"op":"ping"})"}) {
    CHECK(refusal(line) == "id must be a string or an integer of at most 64 bits");
  }
}

TEST_CASE("an acquire carries every option", "[transport]") {
  auto acquire = body_of<AcquireRequest>(
      R"({"op":"acquire","key":"a/b","owner":"o1","ttl_ms":5000,"wait_ms":100,)"
      R"("release_on_disconnect":true,"lock_delay_ms":250})");
  CHECK(acquire.key == "a/b");
  CHECK(acquire.params.owner == "o1");
  CHECK(acquire.params.ttl_ms == 5000);
  CHECK(acquire.wait_ms == 100);
  CHECK(acquire.params.release_on_disconnect);
  CHECK(acquire.params.lock_delay_ms == 250);
  CHECK_FALSE(acquire.params.open_ended);
}

TEST_CASE("an optional field given as null is absent", "[transport]") {
  auto acquire = body_of<AcquireRequest>(
      R"({"op":"acquire","key":"k","owner":"o","ttl_ms":null,"open_ended":true,"wait_ms":null})");
  CHECK(acquire.params.open_ended);
  CHECK_FALSE(acquire.params.ttl_ms);
  CHECK(acquire.wait_ms == 0);
  auto renew = body_of<RenewRequest>(R"({"op":"renew","key":"k","owner":"o","token":null})");
  CHECK_FALSE(renew.holder.token);
}

TEST_CASE("malformed JSON and non-objects are bad requests", "[transport]") {
  for (auto line :
       {R"({"op":"ping")", "not json", R"({"op":"ping"} {"op":"ping"})",
        R"({"op":"ping","x":[1,,2]})", R"({"op":"ping","x":tru})", R"({"op":"ping","x":"\q"})",
        "{\"op\":\"ping\",\"x\":\"\xff\"}", "[1,2", "42 x"}) {
    CHECK_THAT(refusal(line), Catch::StartsWith("malformed JSON"));
  }
  CHECK(refusal("[1,2]") == "the request must be a JSON object");
  CHECK(refusal("42") == "the request must be a JSON object");
}

TEST_CASE("a request malformed past its id still echoes the id, never a broken one",
          "[transport]") {
  std::string deep =
      R"({"id":"d","op":"get","key":"k","x":)" + std::string(40, '[') + std::string(40, ']') + "}";
  ParsedRequest too_deep = parse(deep);
  CHECK(too_deep.id == R"("d")");
  CHECK(std::holds_alternative<Error>(too_deep.body));
  CHECK(parse(R"({"id":13,"op":"acquire","key":"bad\udc00","owner":"o"})").id == "13");
  CHECK(parse(R"({"op":"ping","id":"a\q"})").id.empty());
  CHECK(parse(R"({"op":"ping","x":tru,"id":7})").id.empty());  // never reached
}

// Found by tests/fuzz (regressions/request_parser/stale-padding-*): the parser's buffer kept the
// bytes of a longer earlier line past the end of a short one, where simdjson reads an unclosed
// array's missing elements, so `[` after `[[[[…` read out of bounds and crashed the daemon.
TEST_CASE("a short line after a longer one is parsed on its own", "[transport]") {
  CHECK(refusal(std::string(4096, '[')).starts_with("malformed JSON"));
  CHECK(refusal("[").starts_with("malformed JSON"));
  CHECK(refusal(std::string(100, '{')).starts_with("malformed JSON"));
  CHECK(refusal("{").starts_with("malformed JSON"));
  CHECK(refusal(R"({"op":"ping","x":[[[[[[[[[[[[[[[[)").starts_with("malformed JSON"));
  CHECK(refusal(R"({"op":"ping","x":[)").starts_with("malformed JSON"));
}

TEST_CASE("a missing, unknown or mistyped field is named", "[transport]") {
  CHECK(refusal("{}") == "op is required");
  CHECK(refusal(R"({"op":5})") == "op must be a string");
  CHECK(refusal(R"({"op":"frob"})") == R"(op "frob" is unknown)");
  CHECK(refusal(R"({"op":"acquire","owner":"o"})") == "key is required");
  CHECK(refusal(R"({"op":"acquire","key":"k"})") == "owner is required");
  CHECK(refusal(R"({"op":"acquire","key":7,"owner":"o"})") == "key must be a string");
  CHECK(refusal(R"({"op":"acquire","key":"k","owner":"o","open_ended":1})") ==
        "open_ended must be true or false");
  CHECK(refusal(R"({"op":"check","key":"k"})") == "token is required");
  CHECK(refusal(R"({"op":"unwatch"})") == "watch_id is required");
}

TEST_CASE("a field the op does not define is refused by name", "[transport]") {
  // The typo that once silently gave a 15-minute lease.
  CHECK(refusal(R"({"op":"acquire","key":"k","owner":"o","ttl":5000})") ==
        R"(acquire has no field "ttl")");
  // Known to other ops, not to this one.
  CHECK(refusal(R"({"op":"get","key":"k","ttl_ms":5})") == R"(get has no field "ttl_ms")");
  CHECK(refusal(R"({"op":"ping","key":"k"})") == R"(ping has no field "key")");
  CHECK(refusal(R"({"op":"renew","key":"k","owner":"o","wait_ms":5})") ==
        R"(renew has no field "wait_ms")");
  CHECK(refusal(R"({"op":"list","extra":{"nested":[1,2]}})") == R"(list has no field "extra")");
  // Named before the op's own complaints, which the typo may explain.
  CHECK(refusal(R"({"op":"acquire","keys":"k","owner":"o"})") == R"(acquire has no field "keys")");
  // Null counts as absent, whatever the name.
  body_of<PingRequest>(R"({"op":"ping","key":null,"whatever":null})");
  CHECK(body_of<GetRequest>(R"({"id":"x","op":"get","key":"k","owner":null})").key == "k");
  // The id survives the refusal.
  CHECK(parse(R"({"id":"x","op":"get","key":"k","tll":1})").id == R"("x")");
}

namespace {

// A valid request of each op, as its fields after "op".
std::string_view valid_fields(protocol::Op op) {
  switch (op) {
    case protocol::Op::acquire:
      return R"("key":"k","owner":"o","ttl_ms":1000)";
    case protocol::Op::renew:
    case protocol::Op::release:
      return R"("key":"k","owner":"o")";
    case protocol::Op::keepalive:
      return R"("owner":"o")";
    case protocol::Op::check:
      return R"("key":"k","token":1)";
    case protocol::Op::get:
    case protocol::Op::history:
    case protocol::Op::revoke:
      return R"("key":"k")";
    case protocol::Op::unwatch:
      return R"("watch_id":1)";
    case protocol::Op::backup:
      return R"("dir":"/b")";
    case protocol::Op::list:
    case protocol::Op::watch:
    case protocol::Op::stats:
    case protocol::Op::ping:
      break;
  }
  return {};
}

}  // namespace

TEST_CASE("the op table decides which fields each op reads and refuses", "[transport]") {
  for (const protocol::OpSpec& spec : protocol::kOps) {
    std::string head = R"({"id":1,"op":")" + std::string(spec.name) + '"';
    std::string valid(valid_fields(spec.op));
    std::string line = head + (valid.empty() ? "" : "," + valid) + "}";
    INFO(line);
    ParsedRequest parsed = parse(line);
    REQUIRE(std::holds_alternative<RequestBody>(parsed.body));
    CHECK(op_of(std::get<RequestBody>(parsed.body)) == spec.op);
    // Each field given as an object, which no field may be: the op's builder must check the
    // fields it defines, and the parser refuse the rest by name.
    for (std::size_t i = 2; i < protocol::kFieldCount; ++i) {
      auto field = static_cast<protocol::Field>(i);
      std::string name(to_string(field));
      std::string rest = valid;
      if (auto at = rest.find('"' + name + "\":"); at != std::string::npos) {
        auto end = rest.find(',', at);
        rest.erase(at, end == std::string::npos ? std::string::npos : end - at + 1);
        if (!rest.empty() && rest.back() == ',') rest.pop_back();
      }
      std::string mistyped = head + (rest.empty() ? "" : "," + rest) + ",\"" + name + "\":{}}";
      std::string said = refusal(mistyped);
      if (protocol::defines(spec.op, field)) {
        CHECK(said.starts_with(name + " must be"));
      } else {
        CHECK(said == std::string(spec.name) + " has no field \"" + name + '"');
      }
    }
  }
}

TEST_CASE("a field given twice is refused by name", "[transport]") {
  CHECK(refusal(R"({"op":"acquire","op":"get","key":"k","owner":"o"})") ==
        R"(field "op" is given twice)");
  CHECK(refusal(R"({"op":"get","key":"a","key":"b"})") == R"(field "key" is given twice)");
  CHECK(refusal(R"({"op":"get","key":"a","key":null})") == R"(field "key" is given twice)");
  CHECK(refusal(R"({"id":1,"id":2,"op":"ping"})") == R"(field "id" is given twice)");
  CHECK(refusal(R"({"op":"list","limit":5,"limit":5})") == R"(field "limit" is given twice)");
}

TEST_CASE("numbers must be integers in range", "[transport]") {
  for (auto ttl : {"1.5", R"("5")", "0", "-5", "1e3", "true"}) {
    std::string line =
        std::string(R"({"op":"acquire","key":"k","owner":"o","ttl_ms":)") + ttl + "}";
    CHECK(refusal(line) == "ttl_ms must be a positive integer");
  }
  CHECK(refusal(R"({"op":"release","key":"k","owner":"o","token":-1})") ==
        "token must be a non-negative integer");
  CHECK(refusal(R"({"op":"release","key":"k","owner":"o","token":-18446744073709551616})") ==
        "token must be a non-negative integer");
  CHECK(refusal(R"({"op":"acquire","key":"k","owner":"o","wait_ms":-1})") ==
        "wait_ms must be a non-negative integer");
  CHECK(refusal(R"({"op":"list","limit":0})") == "limit must be a positive integer");
  auto check = body_of<CheckRequest>(R"({"op":"check","key":"k","token":18446744073709551615})");
  CHECK(check.token == 18446744073709551615ULL);
}

TEST_CASE("integers beyond 64 bits saturate: clamped where values are, matching no token",
          "[transport]") {
  auto acquire = body_of<AcquireRequest>(
      R"({"op":"acquire","key":"k","owner":"o","ttl_ms":100000000000000000000000})");
  CHECK(acquire.params.ttl_ms == kMaxWireMillis);
  CHECK(body_of<ListRequest>(R"({"op":"list","limit":18446744073709551616})").limit ==
        body_of<ListRequest>(R"({"op":"list","limit":18446744073709551615})").limit);
  auto check = body_of<CheckRequest>(R"({"op":"check","key":"k","token":18446744073709551616})");
  CHECK(check.token == 18446744073709551615ULL);
  // An id is echoed only as clients' parsers can read it back.
  CHECK(refusal(R"({"id":18446744073709551616,"op":"ping"})") ==
        "id must be a string or an integer of at most 64 bits");
  CHECK(parse(R"({"id":-99999999999999999999,"op":"ping"})").id.empty());
}

TEST_CASE("keys and owners are validated", "[transport]") {
  CHECK(refusal(R"({"op":"get","key":""})") == "key must not be empty");
  CHECK(refusal(R"({"op":"get","key":"a\u0001b"})") == "key must not contain control characters");
  CHECK(refusal(R"({"op":"get","key":")" + std::string(513, 'k') + R"("})") ==
        "key is longer than 512 bytes");
  CHECK(refusal(R"({"op":"acquire","key":"k","owner":"\u00e9"})") ==
        "owner must be printable ASCII");
  CHECK(body_of<GetRequest>(R"({"op":"get","key":"\u00e9/\ud83d\ude00"})").key ==
        "\xc3\xa9/\xf0\x9f\x98\x80");
}

TEST_CASE("contradictory fields are bad requests", "[transport]") {
  CHECK_THAT(refusal(R"({"op":"acquire","key":"k","owner":"o","ttl_ms":5,"open_ended":true})"),
             Catch::Contains("ttl_ms") && Catch::Contains("open_ended"));
  CHECK_THAT(refusal(R"({"op":"watch","key":"k","prefix":"p"})"),
             Catch::Contains("key") && Catch::Contains("prefix"));
  // open_ended: false with a ttl is no contradiction.
  CHECK(body_of<AcquireRequest>(
            R"({"op":"acquire","key":"k","owner":"o","ttl_ms":5,"open_ended":false})")
            .params.ttl_ms == 5);
}

TEST_CASE("pages default to 100 and are clamped to 10000", "[transport]") {
  CHECK(body_of<ListRequest>(R"({"op":"list"})").limit == 100);
  auto list = body_of<ListRequest>(R"({"op":"list","prefix":"a/","after":"a/b","limit":99999})");
  CHECK(list.limit == 10000);
  CHECK(list.prefix == "a/");
  CHECK(list.after == "a/b");
  auto history = body_of<HistoryRequest>(R"({"op":"history","key":"k","before_token":9})");
  CHECK(history.limit == 100);
  CHECK(history.before_token == 9);
}

}  // namespace tenure
