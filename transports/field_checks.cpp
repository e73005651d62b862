#include "transports/field_checks.hpp"

#include <algorithm>

#include "core/validate.hpp"

namespace tenure {

void FieldChecks::fail(std::string message) {
  if (!error_) error_ = Error{errc::bad_request, std::move(message)};
}

void FieldChecks::fail_field(Field field, std::string_view problem) {
  std::string message(to_string(field));
  message += ' ';
  message += problem;
  fail(std::move(message));
}

std::optional<std::string_view> FieldChecks::optional_text(Field field) {
  const FieldValue& value = get(field);
  if (value.absent()) return std::nullopt;
  if (value.kind != FieldValue::Kind::string) {
    fail_field(field, "must be a string");
    return std::nullopt;
  }
  return value.text;
}

std::optional<std::string> FieldChecks::optional_string(Field field) {
  auto text = optional_text(field);
  if (!text) return std::nullopt;
  return std::string(*text);
}

std::optional<std::string> FieldChecks::optional_key() {
  auto key = optional_string(Field::key);
  // validate_key's reasons name the field ("key must not be empty").
  if (key) {
    if (auto problem = validate_key(*key)) fail(*problem);
  }
  return key;
}

std::string FieldChecks::key() {
  if (!present(Field::key)) fail("key is required");
  return optional_key().value_or(std::string());
}

std::optional<SharedString> FieldChecks::optional_owner() {
  auto owner = optional_text(Field::owner);
  if (!owner) return std::nullopt;
  if (auto problem = validate_owner(*owner)) {
    fail(*problem);
    return SharedString();
  }
  return owners_ != nullptr ? owners_->name(*owner) : SharedString(*owner);
}

SharedString FieldChecks::owner() {
  if (!present(Field::owner)) fail("owner is required");
  return optional_owner().value_or(SharedString());
}

bool FieldChecks::flag(Field field) {
  const FieldValue& value = get(field);
  if (value.absent()) return false;
  if (value.kind != FieldValue::Kind::boolean) {
    fail_field(field, "must be true or false");
    return false;
  }
  return value.boolean;
}

std::optional<std::uint64_t> FieldChecks::unsigned_field(Field field, bool allow_zero) {
  const FieldValue& value = get(field);
  if (value.absent()) return std::nullopt;
  bool acceptable = value.kind == FieldValue::Kind::integer && !value.negative &&
                    (allow_zero || value.magnitude > 0);
  if (!acceptable) {
    fail_field(field, allow_zero ? "must be a non-negative integer" : "must be a positive integer");
    return std::nullopt;
  }
  return value.magnitude;
}

std::optional<Millis> FieldChecks::positive_millis(Field field) {
  auto ms = unsigned_field(field, false);
  if (!ms) return std::nullopt;
  return static_cast<Millis>(std::min<std::uint64_t>(*ms, kMaxWireMillis));
}

Millis FieldChecks::millis(Field field) {
  auto ms = unsigned_field(field, true);
  return static_cast<Millis>(std::min<std::uint64_t>(ms.value_or(0), kMaxWireMillis));
}

std::optional<std::uint64_t> FieldChecks::optional_unsigned(Field field) {
  return unsigned_field(field, true);
}

std::optional<std::uint64_t> FieldChecks::optional_positive(Field field) {
  return unsigned_field(field, false);
}

std::uint64_t FieldChecks::required_unsigned(Field field) {
  if (!present(field)) fail_field(field, "is required");
  return optional_unsigned(field).value_or(0);
}

}  // namespace tenure
