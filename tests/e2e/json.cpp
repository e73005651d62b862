#include "tests/e2e/json.hpp"

#include <simdjson.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <limits>

#include "core/json_writer.hpp"

namespace e2e {

struct JsonBuilder {
  static Json build(simdjson::dom::element e, const std::shared_ptr<const std::string>& source) {
    Json j;
    j.source_ = source;
    switch (e.type()) {
      case simdjson::dom::element_type::ARRAY:
        j.kind_ = Json::Kind::array;
        {
          simdjson::dom::array array;
          if (e.get_array().get(array) == simdjson::SUCCESS) {
            for (simdjson::dom::element child : array) j.items_.push_back(build(child, source));
          }
        }
        break;
      case simdjson::dom::element_type::OBJECT:
        j.kind_ = Json::Kind::object;
        {
          simdjson::dom::object object;
          if (e.get_object().get(object) == simdjson::SUCCESS) {
            for (simdjson::dom::key_value_pair field : object) {
              j.names_.emplace_back(field.key);
              j.items_.push_back(build(field.value, source));
            }
          }
        }
        break;
      case simdjson::dom::element_type::INT64:
        j.kind_ = Json::Kind::int64;
        j.i_ = e.get_int64().value_unsafe();
        break;
      case simdjson::dom::element_type::UINT64:
        j.kind_ = Json::Kind::uint64;
        j.u_ = e.get_uint64().value_unsafe();
        break;
      case simdjson::dom::element_type::DOUBLE:
        j.kind_ = Json::Kind::real;
        j.d_ = e.get_double().value_unsafe();
        break;
      case simdjson::dom::element_type::STRING:
        j.kind_ = Json::Kind::string;
        j.s_ = std::string(e.get_string().value_unsafe());
        break;
      case simdjson::dom::element_type::BOOL:
        j.kind_ = Json::Kind::boolean;
        j.bool_ = e.get_bool().value_unsafe();
        break;
      case simdjson::dom::element_type::NULL_VALUE:
        j.kind_ = Json::Kind::null;
        break;
    }
    return j;
  }

  static Json missing(const std::shared_ptr<const std::string>& source) {
    Json j;
    j.source_ = source;
    return j;
  }
};

std::optional<Json> Json::parse(std::string_view text, std::string* error) {
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  auto err = parser.parse(padded).get(root);
  if (err) {
    if (error) *error = simdjson::error_message(err);
    return std::nullopt;
  }
  auto source = std::make_shared<const std::string>(text);
  Json j = JsonBuilder::build(root, source);
  j.is_root_ = true;
  return j;
}

Json Json::operator[](std::string_view name) const {
  if (kind_ == Kind::object) {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return items_[i];
    }
  }
  return JsonBuilder::missing(source_);
}

Json Json::operator[](std::size_t index) const {
  if (kind_ == Kind::array && index < items_.size()) return items_[index];
  return JsonBuilder::missing(source_);
}

bool Json::has(std::string_view name) const {
  if (kind_ != Kind::object) return false;
  for (const auto& n : names_) {
    if (n == name) return true;
  }
  return false;
}

std::size_t Json::size() const {
  return (kind_ == Kind::array || kind_ == Kind::object) ? items_.size() : 0;
}

std::string Json::str() const {
  if (kind_ == Kind::string) return s_;
  return "<" + dump() + ">";
}

std::uint64_t Json::u64() const {
  if (kind_ == Kind::uint64) return u_;
  if (kind_ == Kind::int64 && i_ >= 0) return static_cast<std::uint64_t>(i_);
  return std::numeric_limits<std::uint64_t>::max();
}

std::int64_t Json::i64() const {
  if (kind_ == Kind::int64) return i_;
  if (kind_ == Kind::uint64 && u_ <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(u_);
  }
  return std::numeric_limits<std::int64_t>::min();
}

std::string Json::dump() const {
  std::string out;
  switch (kind_) {
    case Kind::missing:
      return "missing";
    case Kind::null:
      return "null";
    case Kind::boolean:
      return bool_ ? "true" : "false";
    case Kind::int64:
      return std::to_string(i_);
    case Kind::uint64:
      return std::to_string(u_);
    case Kind::real: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", d_);
      return buf;
    }
    case Kind::string:
      tenure::append_json_string(out, s_);
      return out;
    case Kind::array:
      out = "[";
      for (std::size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ",";
        out += items_[i].dump();
      }
      return out + "]";
    case Kind::object:
      out = "{";
      for (std::size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ",";
        tenure::append_json_string(out, names_[i]);
        out += ":";
        out += items_[i].dump();
      }
      return out + "}";
  }
  return out;
}

const std::string& Json::source() const {
  static const std::string kEmpty;
  return source_ ? *source_ : kEmpty;
}

bool Json::same_as(const Json& o) const {
  if (is_integer() && o.is_integer()) {
    if (kind_ == Kind::int64 && i_ < 0) return o.kind_ == Kind::int64 && o.i_ == i_;
    if (o.kind_ == Kind::int64 && o.i_ < 0) return false;
    return u64() == o.u64();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::missing:
    case Kind::null:
      return true;
    case Kind::boolean:
      return bool_ == o.bool_;
    case Kind::real:
      return d_ == o.d_;
    case Kind::string:
      return s_ == o.s_;
    case Kind::array:
    case Kind::object:
      if (items_.size() != o.items_.size() || names_ != o.names_) return false;
      for (std::size_t i = 0; i < items_.size(); ++i) {
        if (!items_[i].same_as(o.items_[i])) return false;
      }
      return true;
    default:
      return false;
  }
}

std::ostream& operator<<(std::ostream& os, const Json& j) {
  return os << Catch::StringMaker<Json>::convert(j);
}

std::string quote(std::string_view s) {
  std::string out;
  tenure::append_json_string(out, s);
  return out;
}

namespace {
bool digits(std::string_view t, std::size_t pos, std::size_t n, int* out) {
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (t[i] < '0' || t[i] > '9') return false;
    v = v * 10 + (t[i] - '0');
  }
  *out = v;
  return true;
}
}  // namespace

std::optional<std::int64_t> parse_time_ms(std::string_view t) {
  // 2026-11-30T03:55:33.123Z
  if (t.size() != 24 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' ||
      t[16] != ':' || t[19] != '.' || t[23] != 'Z') {
    return std::nullopt;
  }
  int y, mo, d, h, mi, s, ms;
  if (!digits(t, 0, 4, &y) || !digits(t, 5, 2, &mo) || !digits(t, 8, 2, &d) ||
      !digits(t, 11, 2, &h) || !digits(t, 14, 2, &mi) || !digits(t, 17, 2, &s) ||
      !digits(t, 20, 3, &ms)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  std::time_t secs = timegm(&tm);
  return static_cast<std::int64_t>(secs) * 1000 + ms;
}

std::optional<std::int64_t> time_ms(const Json& j) {
  if (!j.is_string()) return std::nullopt;
  return parse_time_ms(j.str());
}

std::int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace e2e

namespace Catch {
std::string StringMaker<e2e::Json>::convert(const e2e::Json& j) {
  if (j.is_root()) return j.source();
  std::string out = j.dump();
  if (!j.source().empty()) out += "  (in " + j.source() + ")";
  return out;
}
}  // namespace Catch
