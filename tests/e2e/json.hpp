#pragma once
// A small owning JSON value for end-to-end tests. Lines from tenured are parsed with simdjson and
// copied into this tree so tests can keep them, compare fields with Catch2, and print the whole
// reply a field came from when an assertion fails.
#include <catch2/catch.hpp>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace e2e {

class Json {
 public:
  enum class Kind { missing, null, boolean, int64, uint64, real, string, array, object };

  Json() = default;

  // Parses one JSON text. Returns an empty optional (and the reason in *error) when it is not
  // valid JSON.
  static std::optional<Json> parse(std::string_view text, std::string* error = nullptr);

  Kind kind() const { return kind_; }
  bool is_missing() const { return kind_ == Kind::missing; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_integer() const { return kind_ == Kind::int64 || kind_ == Kind::uint64; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }

  // Object member (a `missing` value when absent or when this is not an object).
  Json operator[](std::string_view name) const;
  // Array element (a `missing` value when out of range or when this is not an array).
  Json operator[](std::size_t index) const;
  Json operator[](int index) const { return (*this)[static_cast<std::size_t>(index)]; }
  bool has(std::string_view name) const;
  std::size_t size() const;  // array elements or object members
  const std::vector<std::string>& keys() const { return names_; }

  // Typed accessors; a value of another kind yields a sentinel that no test expects
  // ("<kind>" for str(), 2^64-1 for u64(), INT64_MIN for i64()).
  std::string str() const;
  std::uint64_t u64() const;
  std::int64_t i64() const;
  bool boolean() const { return kind_ == Kind::boolean && bool_; }

  // Compact JSON text of this value.
  std::string dump() const;
  // The whole line this value was parsed from (empty for the root itself).
  const std::string& source() const;
  bool is_root() const { return is_root_; }

  friend bool operator==(const Json& a, std::string_view b) { return a.is_string() && a.s_ == b; }
  friend bool operator==(const Json& a, const char* b) { return a == std::string_view(b); }
  friend bool operator==(const Json& a, const std::string& b) { return a == std::string_view(b); }
  friend bool operator==(const Json& a, std::nullptr_t) { return a.is_null(); }
  friend bool operator==(const Json& a, bool b) { return a.is_bool() && a.bool_ == b; }
  template <std::integral T>
  requires(!std::same_as<T, bool>) friend bool operator==(const Json& a, T b) {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) return a.kind_ == Kind::int64 && a.i_ == static_cast<std::int64_t>(b);
    }
    auto ub = static_cast<std::uint64_t>(b);
    if (a.kind_ == Kind::uint64) return a.u_ == ub;
    if (a.kind_ == Kind::int64) return a.i_ >= 0 && static_cast<std::uint64_t>(a.i_) == ub;
    return false;
  }
  // Structural equality.
  bool same_as(const Json& other) const;

 private:
  friend struct JsonBuilder;
  Kind kind_ = Kind::missing;
  bool is_root_ = false;
  bool bool_ = false;
  std::int64_t i_ = 0;
  std::uint64_t u_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<std::string> names_;  // object member names, in order
  std::vector<Json> items_;         // object member values or array elements
  std::shared_ptr<const std::string> source_;
};

std::ostream& operator<<(std::ostream& os, const Json& j);

// Quotes s as a JSON string.
std::string quote(std::string_view s);

// Parses an RFC 3339 UTC time with millisecond precision ("2026-11-30T03:55:33.123Z") into
// milliseconds since the Unix epoch. Empty when the text does not have exactly that form.
std::optional<std::int64_t> parse_time_ms(std::string_view text);
// Parses the time in a JSON string value; empty for any other kind.
std::optional<std::int64_t> time_ms(const Json& j);
// Milliseconds since the Unix epoch, now, on the system clock.
std::int64_t wall_now_ms();

}  // namespace e2e

namespace Catch {
template <>
struct StringMaker<e2e::Json> {
  static std::string convert(const e2e::Json& j);
};
}  // namespace Catch
