#include "apps/tenure/message.hpp"

#include "apps/tenure/failure.hpp"
#include "apps/tenure/human_time.hpp"

namespace tenure::cli {

Message::Message(std::string line)
    : line_(std::move(line)), parser_(std::make_unique<simdjson::dom::parser>()) {
  if (parser_->parse(line_).get_object().get(fields_) != simdjson::SUCCESS) {
    throw CliError("tenured sent something that is not a JSON object: " + line_);
  }
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

}  // namespace tenure::cli
