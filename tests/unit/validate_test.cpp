#include "core/validate.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <ctime>
#include <limits>

#include "core/clock.hpp"
#include "core/json_writer.hpp"

using namespace tenure;

TEST_CASE("keys are 1..512 bytes of UTF-8 without control characters", "[core]") {
  CHECK_FALSE(validate_key("github.com/rysweet/amplihack-rs/pr/1051"));
  CHECK_FALSE(validate_key("clé/ключ/鍵/🔑"));
  CHECK_FALSE(validate_key(std::string(512, 'k')));
  CHECK(validate_key(""));
  CHECK(validate_key(std::string(513, 'k')));
  CHECK(validate_key("a\nb"));
  CHECK(validate_key(std::string("a\0b", 3)));
  CHECK(validate_key("a\x7f"));
  CHECK(validate_key("\xff\xfe"));
  CHECK(validate_key("\xc0\xaf"));  // overlong
}

TEST_CASE("owners are 1..128 bytes of printable ASCII", "[core]") {
  CHECK_FALSE(validate_owner("2f1c7f3e-55a4-4a8e-9c39-5d1e0f6a7b21"));
  CHECK(validate_owner(""));
  CHECK(validate_owner(std::string(129, 'o')));
  CHECK(validate_owner("tab\there"));
  CHECK(validate_owner("é"));
}

TEST_CASE("times are RFC 3339 UTC with milliseconds", "[core]") {
  CHECK(format_time(0) == "1970-01-01T00:00:00.000Z");
  CHECK(format_time(1'796'010'933'123) == "2026-11-30T03:55:33.123Z");
  CHECK(format_time(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(format_time(951'782'400'000) == "2000-02-29T00:00:00.000Z");
  CHECK(format_time(4'102'444'799'999) == "2099-12-31T23:59:59.999Z");
  // Beyond year 9999 a time is not RFC 3339: milliseconds, signed, whatever their width.
  CHECK(format_time(std::numeric_limits<Millis>::min()) == "-9223372036854775808ms");
  CHECK(TimeText(std::numeric_limits<Millis>::max()).view() == "+9223372036854775807ms");
  CHECK(TimeText(1'796'010'933'123).view() == "2026-11-30T03:55:33.123Z");
}

TEST_CASE("times of one second share its text, and the next second has its own", "[core]") {
  // A thread keeps the text of the last second it formatted: each of these follows another.
  CHECK(format_time(1'796'010'933'123) == "2026-11-30T03:55:33.123Z");
  CHECK(format_time(1'796'010'933'000) == "2026-11-30T03:55:33.000Z");
  CHECK(format_time(1'796'010'933'999) == "2026-11-30T03:55:33.999Z");
  CHECK(format_time(1'796'010'934'000) == "2026-11-30T03:55:34.000Z");
  CHECK(format_time(1'796'010'932'999) == "2026-11-30T03:55:32.999Z");
  // Before 1970 a second still runs from .000 up: -1000 and -1 are the same second.
  CHECK(format_time(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(format_time(-1000) == "1969-12-31T23:59:59.000Z");
  CHECK(format_time(-1001) == "1969-12-31T23:59:58.999Z");
  CHECK(format_time(0) == "1970-01-01T00:00:00.000Z");
  // Out of range between two times of one second: neither is taken for the other.
  CHECK(format_time(86'400'000) == "1970-01-02T00:00:00.000Z");
  CHECK(format_time(std::numeric_limits<Millis>::max()) == "+9223372036854775807ms");
  CHECK(format_time(86'400'001) == "1970-01-02T00:00:00.001Z");
  CHECK(format_time(std::numeric_limits<Millis>::min() + 1) == "-9223372036854775807ms");
  // A reply's two times (now and now + ttl) in turn, then a third second.
  for (int i = 0; i < 3; ++i) {
    CHECK(format_time(1'796'010'933'123 + i) ==
          "2026-11-30T03:55:33.12" + std::to_string(3 + i) + "Z");
    CHECK(format_time(1'796'010'963'123 + i) ==
          "2026-11-30T03:56:03.12" + std::to_string(3 + i) + "Z");
  }
  CHECK(format_time(1'796'097'333'123) == "2026-12-01T03:55:33.123Z");
  CHECK(format_time(1'796'010'963'999) == "2026-11-30T03:56:03.999Z");
  CHECK(format_time(1'796'010'933'999) == "2026-11-30T03:55:33.999Z");
}

TEST_CASE("time formatting agrees with gmtime from 1970 to 2286", "[core]") {
  for (Millis t = 0; t < 10'000'000'000'000; t += 7'777'777'777) {
    std::time_t secs = static_cast<std::time_t>(t / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char expected[64];
    std::snprintf(expected, sizeof expected, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(t % 1000));
    REQUIRE(format_time(t) == expected);
  }
}

TEST_CASE("the JSON writer escapes strings and separates members", "[core]") {
  std::string out;
  JsonWriter w(out);
  w.begin_object().field("a", "x\"y\\\n\x01").field("n", std::int64_t{-3}).null_field("z");
  w.key("arr").begin_array().value(true).value(std::uint64_t{7}).end_array().end_object();
  CHECK(out == R"({"a":"x\"y\\\n\u0001","n":-3,"z":null,"arr":[true,7]})");
  // A name longer than the writer's buffer for names takes the general path, separated alike.
  std::string name(70, 'n');
  out.clear();
  JsonWriter(out).begin_object().field("a", 1).field(name, 2).end_object();
  CHECK(out == "{\"a\":1,\"" + name + "\":2}");
  // Plain runs around escapes, at both ends, and UTF-8 passed through as it is.
  std::string s;
  append_json_string(s, "ab\tcd\x7f\xc3\xa9\r");
  CHECK(s == "\"ab\\tcd\\u007f\xc3\xa9\\r\"");
  s.clear();
  append_json_string(s, "");
  CHECK(s == "\"\"");
  append_json_string(s, "\x1f\"");  // after what is there, each byte escaped
  CHECK(s == "\"\"\"\\u001f\\\"\"");
}

TEST_CASE("the JSON writer escapes every byte wherever it falls in a long string", "[core]") {
  // Plain runs are found 8 bytes at a time: each byte value at each place of a 19-byte string
  // (two words and a tail), beside bytes either side of the escaped ranges, is escaped or kept
  // exactly as one byte at a time would.
  auto expected = [](std::string_view s) {
    std::string e = "\"";
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        e += '\\';
        e += static_cast<char>(c);
      } else if (c == '\n') {
        e += "\\n";
      } else if (c == '\r') {
        e += "\\r";
      } else if (c == '\t') {
        e += "\\t";
      } else if (c < 0x20 || c == 0x7F) {
        static constexpr char kHex[] = "0123456789abcdef";
        e += "\\u00";
        e += kHex[c >> 4];
        e += kHex[c & 0xF];
      } else {
        e += static_cast<char>(c);
      }
    }
    return e + "\"";
  };
  for (char fill : {'a', '\x1f', '!', '#', '[', ']', '~', '\x80', '\xff'}) {
    for (int byte = 0; byte < 256; ++byte) {
      for (std::size_t at = 0; at < 19; ++at) {
        std::string s(19, fill);
        s[at] = static_cast<char>(byte);
        std::string out;
        append_json_string(out, s);
        REQUIRE(out == expected(s));
      }
    }
  }
}
