#include "protocol/message.hpp"

#include <cstdio>
#include <ctime>

namespace tenure::protocol {

std::optional<Message> Message::parse(std::string line) {
  Message m;
  m.line_ = std::move(line);
  m.parser_ = std::make_unique<simdjson::dom::parser>();
  if (m.parser_->parse(m.line_).get_object().get(m.fields_) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  return m;
}

std::optional<std::uint64_t> Message::id() const { return uint_field(fields_, "id"); }

std::string_view Message::status() const { return string_field(fields_, "status").value_or(""); }

std::string_view Message::event() const { return string_field(fields_, "event").value_or(""); }

std::optional<std::string_view> string_field(Fields fields, std::string_view name) {
  std::string_view value;
  if (fields[name].get_string().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> uint_field(Fields fields, std::string_view name) {
  std::uint64_t value = 0;
  if (fields[name].get_uint64().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

std::optional<std::int64_t> int_field(Fields fields, std::string_view name) {
  std::int64_t value = 0;
  if (fields[name].get_int64().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

std::optional<bool> bool_field(Fields fields, std::string_view name) {
  bool value = false;
  if (fields[name].get_bool().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

std::optional<Fields> object_field(Fields fields, std::string_view name) {
  Fields value;
  if (fields[name].get_object().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

std::optional<simdjson::dom::array> array_field(Fields fields, std::string_view name) {
  simdjson::dom::array value;
  if (fields[name].get_array().get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

std::optional<Millis> time_field(Fields fields, std::string_view name) {
  auto text = string_field(fields, name);
  return text ? parse_time(*text) : std::nullopt;
}

std::optional<Millis> parse_time(std::string_view text) {
  std::string s(text);  // sscanf needs a terminated string
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(static_cast<std::size_t>(consumed));
  Millis ms = 0;
  if (rest.size() == 5 && rest[0] == '.') {
    for (char c : rest.substr(1, 3)) {
      if (c < '0' || c > '9') return std::nullopt;
      ms = ms * 10 + (c - '0');
    }
    rest.remove_prefix(4);
  }
  if (rest != "Z") return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<Millis>(timegm(&tm)) * 1000 + ms;
}

}  // namespace tenure::protocol
