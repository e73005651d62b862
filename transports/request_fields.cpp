#include "transports/request_fields.hpp"

#include <limits>

namespace tenure {
namespace {

namespace od = simdjson::ondemand;

// Requests are flat; anything nested deeper than this is refused rather than recursed into.
constexpr int kMaxDepth = 32;

// simdjson's raw token runs up to the next token, trailing whitespace included.
std::string_view trim_trailing_space(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

simdjson::error_code read_value(od::value value, FieldValue& out, int depth);

// -?[1-9][0-9]*: the shape of the integers simdjson cannot hold in 64 bits.
bool is_big_integer(std::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  return text.size() > 1 && text.front() != '0' &&
         text.find_first_not_of("0123456789") == std::string_view::npos;
}

simdjson::error_code read_number(od::value value, FieldValue& out) {
  od::number number;
  if (auto error = value.get_number().get(number)) {
    // An integer beyond 64 bits is valid JSON. It saturates: a TTL or a limit that large is
    // clamped like any other too large, a token or revision that large matches none, and an id
    // is echoed as sent.
    if (error != simdjson::NUMBER_ERROR || !is_big_integer(out.raw)) return error;
    out.kind = FieldValue::Kind::integer;
    out.negative = out.raw.front() == '-';
    out.magnitude = std::numeric_limits<std::uint64_t>::max();
    return simdjson::SUCCESS;
  }
  switch (number.get_number_type()) {
    case od::number_type::signed_integer: {
      std::int64_t v = number.get_int64();
      out.kind = FieldValue::Kind::integer;
      out.negative = v < 0;
      out.magnitude = out.negative ? 0 - static_cast<std::uint64_t>(v) : v;
      break;
    }
    case od::number_type::unsigned_integer:
      out.kind = FieldValue::Kind::integer;
      out.magnitude = number.get_uint64();
      break;
    case od::number_type::floating_point_number:
      out.kind = FieldValue::Kind::number;
      break;
  }
  return simdjson::SUCCESS;
}

// Containers only need validating: no request field is a container.
simdjson::error_code read_container(od::value value, od::json_type type, int depth) {
  if (depth >= kMaxDepth) return simdjson::DEPTH_ERROR;
  FieldValue ignored;
  if (type == od::json_type::array) {
    od::array array;
    if (auto error = value.get_array().get(array)) return error;
    for (auto element : array) {
      od::value v;
      if (auto error = element.get(v)) return error;
      if (auto error = read_value(v, ignored, depth + 1)) return error;
    }
    return simdjson::SUCCESS;
  }
  od::object object;
  if (auto error = value.get_object().get(object)) return error;
  for (auto field : object) {
    std::string_view name;
    if (auto error = field.unescaped_key().get(name)) return error;
    od::value v;
    if (auto error = field.value().get(v)) return error;
    if (auto error = read_value(v, ignored, depth + 1)) return error;
  }
  return simdjson::SUCCESS;
}

simdjson::error_code read_value(od::value value, FieldValue& out, int depth) {
  od::json_type type;
  if (auto error = value.type().get(type)) return error;
  out = FieldValue{};
  out.raw = trim_trailing_space(value.raw_json_token());
  switch (type) {
    case od::json_type::string:
      // Kind set only once the text is read: a request refused as malformed still echoes an id
      // read whole before the damage, never a broken one.
      if (auto error = value.get_string().get(out.text)) return error;
      out.kind = FieldValue::Kind::string;
      return simdjson::SUCCESS;
    case od::json_type::number:
      return read_number(value, out);
    case od::json_type::boolean:
      out.kind = FieldValue::Kind::boolean;
      return value.get_bool().get(out.boolean);
    case od::json_type::null: {
      bool is_null = false;
      if (auto error = value.is_null().get(is_null)) return error;
      out.kind = FieldValue::Kind::null;
      return is_null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
    case od::json_type::array:
      out.kind = FieldValue::Kind::array;
      return read_container(value, type, depth);
    case od::json_type::object:
      out.kind = FieldValue::Kind::object;
      return read_container(value, type, depth);
  }
  return simdjson::INCORRECT_TYPE;
}

// A root that is not an object is refused either way; this tells malformed from merely wrong.
simdjson::error_code validate_root(od::document& document, od::json_type type) {
  switch (type) {
    case od::json_type::number:
      return document.get_number().error();
    case od::json_type::string:
      return document.get_string().error();
    case od::json_type::boolean:
      return document.get_bool().error();
    case od::json_type::null: {
      bool is_null = false;
      if (auto error = document.is_null().get(is_null)) return error;
      return is_null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
    case od::json_type::array:
    case od::json_type::object: {
      od::value value;
      if (auto error = document.get_value().get(value)) return error;
      FieldValue ignored;
      return read_value(value, ignored, 0);
    }
  }
  return simdjson::INCORRECT_TYPE;
}

std::string malformed(simdjson::error_code error) {
  return std::string("malformed JSON: ") + simdjson::error_message(error);
}

}  // namespace

std::optional<std::string> FieldReader::read(simdjson::padded_string_view json, Fields& fields) {
  fields.fill(FieldValue{});
  unknown_.reset();
  repeated_.reset();
  od::document document;
  if (auto error = parser_.iterate(json).get(document)) return malformed(error);
  od::json_type type;
  if (auto error = document.type().get(type)) return malformed(error);
  if (type != od::json_type::object) {
    if (auto error = validate_root(document, type)) return malformed(error);
    return "the request must be a JSON object";
  }
  od::object object;
  if (auto error = document.get_object().get(object)) return malformed(error);
  for (auto field : object) {
    std::string_view name;
    if (auto error = field.unescaped_key().get(name)) return malformed(error);
    od::value value;
    if (auto error = field.value().get(value)) return malformed(error);
    auto known = protocol::parse_field(name);
    bool seen = known && fields[static_cast<std::size_t>(*known)].kind != FieldValue::Kind::absent;
    if (seen && !repeated_) repeated_.emplace(name);
    FieldValue ignored;
    FieldValue& out = known && !seen ? fields[static_cast<std::size_t>(*known)] : ignored;
    if (auto error = read_value(value, out, 1)) return malformed(error);
    if (!known && !unknown_ && ignored.kind != FieldValue::Kind::null) unknown_.emplace(name);
  }
  // Past the object there must be nothing left: simdjson reports that as out of bounds.
  if (document.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    return "malformed JSON: content after the request object";
  }
  return std::nullopt;
}

}  // namespace tenure
