#pragma once
// One line from tenured — a reply or an event — parsed, with typed access to its fields.
#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"

namespace tenure::protocol {

using Fields = simdjson::dom::object;

class Message {
 public:
  // Empty when the line is not a JSON object.
  static std::optional<Message> parse(std::string line);

  const std::string& line() const { return line_; }
  Fields fields() const { return fields_; }
  std::optional<std::uint64_t> id() const;
  std::string_view status() const;  // "" for events
  std::string_view event() const;   // "" for replies

 private:
  Message() = default;
  std::string line_;
  // The DOM points into its parser, so the parser lives on the heap and moves with the Message.
  std::unique_ptr<simdjson::dom::parser> parser_;
  Fields fields_;
};

// Field accessors: an absent, null or mistyped field reads as empty.
std::optional<std::string_view> string_field(Fields fields, std::string_view name);
std::optional<std::uint64_t> uint_field(Fields fields, std::string_view name);
std::optional<std::int64_t> int_field(Fields fields, std::string_view name);
std::optional<bool> bool_field(Fields fields, std::string_view name);
std::optional<Fields> object_field(Fields fields, std::string_view name);
std::optional<simdjson::dom::array> array_field(Fields fields, std::string_view name);
// An RFC 3339 time field as Unix ms.
std::optional<Millis> time_field(Fields fields, std::string_view name);

// RFC 3339 UTC with optional milliseconds, "2026-11-30T03:55:33.123Z", to Unix ms.
std::optional<Millis> parse_time(std::string_view text);

}  // namespace tenure::protocol
