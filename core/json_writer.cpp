#include "core/json_writer.hpp"

#include <cassert>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace tenure {

namespace {

constexpr std::size_t kLongestName = 60;  // written without a call to append_json_string

char* write_escaped(char* p, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  *p++ = '\\';
  switch (c) {
    case '"':
    case '\\':
      *p++ = static_cast<char>(c);
      return p;
    case '\n':
      *p++ = 'n';
      return p;
    case '\r':
      *p++ = 'r';
      return p;
    case '\t':
      *p++ = 't';
      return p;
    default:
      std::memcpy(p, "u00", 3);
      p[3] = kHex[c >> 4];
      p[4] = kHex[c & 0xF];
      return p + 5;
  }
}

bool needs_escape(unsigned char c) { return c < 0x20 || c == 0x7F || c == '"' || c == '\\'; }

// Whether any of the 8 bytes of `w` needs escaping (< 0x20, '"', '\\', 0x7F), tested 8 at a
// time: exact, since a borrow only crosses a byte that is itself flagged. Bytes >= 0x80 (UTF-8)
// never flag.
bool word_needs_escape(std::uint64_t w) {
  constexpr std::uint64_t kOnes = 0x0101010101010101;
  constexpr std::uint64_t kHigh = 0x8080808080808080;
  auto zero_byte = [](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  return (((w - kOnes * 0x20) & ~w & kHigh) | zero_byte(w ^ (kOnes * '"')) |
          zero_byte(w ^ (kOnes * '\\')) | zero_byte(w ^ (kOnes * 0x7F))) != 0;
}

// Where the first byte to escape is in `s`, or s.size(): 8 bytes at a step.
std::size_t first_to_escape(std::string_view s) {
  std::size_t i = 0;
  for (; s.size() - i >= sizeof(std::uint64_t); i += sizeof(std::uint64_t)) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, sizeof w);
    if (word_needs_escape(w)) break;
  }
  while (i < s.size() && !needs_escape(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

}  // namespace

char* write_json_string(char* p, std::string_view s) {
  std::size_t first = first_to_escape(s);
  *p++ = '"';
  std::memcpy(p, s.data(), first);
  p += first;
  for (std::size_t i = first; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (needs_escape(c)) {
      p = write_escaped(p, c);
    } else {
      *p++ = static_cast<char>(c);
    }
  }
  *p++ = '"';
  return p;
}

// Replies and pushes are mostly names, keys, owners and times with nothing to escape: those are
// found 8 bytes at a step and copied in one go, quotes included (a byte-at-a-time scan and a
// call per quote were a fifth of the daemon's instructions in an expiry storm). Otherwise the
// string is written into room for the worst case, which is then cut to what it took.
void append_json_string(std::string& out, std::string_view s) {
  std::size_t at = out.size();
  if (first_to_escape(s) == s.size()) {
    out.resize(at + s.size() + 2);
    char* p = out.data() + at;
    p[0] = '"';
    std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    return;
  }
  out.resize(at + json_string_bound(s.size()));
  out.resize(static_cast<std::size_t>(write_json_string(out.data() + at, s) - out.data()));
}

void JsonWriter::separate() {
  if (need_comma_) out_.push_back(',');
  need_comma_ = true;
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_.push_back('{');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_.push_back('}');
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_.push_back('[');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_.push_back(']');
  need_comma_ = true;
  return *this;
}

// A member's name is one of the protocol's field names, with nothing to escape: it goes out with
// its comma, quotes and colon in one append: about 85 instructions a name, where the escape scan
// and four appends took 200 (callgrind; a lease's reply has ten names).
JsonWriter& JsonWriter::key(std::string_view name) {
  assert(first_to_escape(name) == name.size());
  char buf[kLongestName + 4];
  char* p = buf;
  if (name.size() > kLongestName) {
    separate();
    append_json_string(out_, name);
  } else {
    if (need_comma_) *p++ = ',';
    *p++ = '"';
    std::memcpy(p, name.data(), name.size());
    p += name.size();
    *p++ = '"';
  }
  *p++ = ':';
  out_.append(buf, static_cast<std::size_t>(p - buf));
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  append_json_string(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t v) {
  separate();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t v) {
  separate();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  separate();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_.append(json);
  return *this;
}

}  // namespace tenure
