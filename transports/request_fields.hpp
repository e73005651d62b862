#pragma once
// Reads one request object into its known fields, before the op says which of them matter and
// what type each must have (§3). Every byte is validated, unknown fields included, so malformed
// JSON never slips through in a field the op happens to ignore. A field of an unknown name (not
// null) and a field given twice are remembered, for the op to refuse by name (§2).
#include <simdjson.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/ops.hpp"

namespace tenure {

using protocol::Field;

// One field as read. Views point into the reader and live until its next read.
struct FieldValue {
  enum class Kind : std::uint8_t { absent, null, string, integer, number, boolean, object, array };
  Kind kind = Kind::absent;
  std::string_view raw;   // the JSON text of a scalar, as sent
  std::string_view text;  // string: the unescaped value
  // integer: the value is -magnitude when negative is set, else magnitude; an integer beyond 64
  // bits has magnitude 2^64 - 1
  bool negative = false;
  std::uint64_t magnitude = 0;
  bool boolean = false;

  // An optional field given as null counts as absent.
  bool absent() const { return kind == Kind::absent || kind == Kind::null; }
};

using Fields = std::array<FieldValue, protocol::kFieldCount>;

class FieldReader {
 public:
  // Reads the object in `json`; on failure, the reason. `json` must be followed by
  // SIMDJSON_PADDING zero bytes (simdjson reads them when a container is left open).
  std::optional<std::string> read(simdjson::padded_string_view json, Fields& fields);

  // Of the last read: the first field of a name no op defines (null ones aside), and the first
  // name given twice.
  const std::optional<std::string>& unknown() const { return unknown_; }
  const std::optional<std::string>& repeated() const { return repeated_; }

 private:
  simdjson::ondemand::parser parser_;
  std::optional<std::string> unknown_;
  std::optional<std::string> repeated_;
};

}  // namespace tenure
