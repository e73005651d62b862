#pragma once
// A small streaming JSON writer for replies, events and CLI requests. Appends to one string
// buffer; the caller reuses the buffer to avoid allocations per message.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tenure {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // REQUIRES: `name` needs no escaping (a field name of the protocol; asserted).
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(std::uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();
  // Inserts already-encoded JSON (e.g. an echoed request id).
  JsonWriter& raw(std::string_view json);

  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }
  template <typename T>
  JsonWriter& field(std::string_view name, const std::optional<T>& v) {
    key(name);
    return v ? value(*v) : null();
  }
  JsonWriter& null_field(std::string_view name) { return key(name).null(); }

 private:
  void separate();

  std::string& out_;
  bool need_comma_ = false;
};

// Appends s to out as a quoted JSON string.
void append_json_string(std::string& out, std::string_view s);

// The most that write_json_string writes for a string of `size` bytes: each escaped as \u00XX,
// and the quotes.
constexpr std::size_t json_string_bound(std::size_t size) { return 6 * size + 2; }

// Writes s as a quoted JSON string at p, which has room for json_string_bound(s.size()) bytes,
// and returns the end of what it wrote.
char* write_json_string(char* p, std::string_view s);

}  // namespace tenure
