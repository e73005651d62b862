#pragma once
// Reading etcd's v3 JSON gateway answers with simdjson (header-only: the bench's etcd client
// uses it too).
#include <simdjson.h>

#include <charconv>
#include <cstdint>
#include <string_view>

namespace tenure::storage {

// The gateway writes int64 fields as JSON strings and leaves proto3 defaults (0, false, "") out.
inline std::int64_t int64_field(simdjson::dom::element object, std::string_view name) {
  std::string_view text;
  if (object[name].get(text)) return 0;
  std::int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

}  // namespace tenure::storage
