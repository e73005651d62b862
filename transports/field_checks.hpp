#pragma once
// Typed access to the fields of one request (§3). The first problem found is kept and later
// reads return defaults, so a builder reads every field it needs and looks at `error` once.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.hpp"
#include "core/errc.hpp"
#include "core/shared_string.hpp"
#include "transports/owner_names.hpp"
#include "transports/request_fields.hpp"

namespace tenure {

// Durations are capped here: far beyond any server limit, far from overflowing `now + d`.
inline constexpr Millis kMaxWireMillis = Millis{1} << 50;

class FieldChecks {
 public:
  // `owners`: the connection's, where owners are looked up (null: each owner is a new copy).
  explicit FieldChecks(const Fields& fields, OwnerNames* owners = nullptr)
      : fields_(fields), owners_(owners) {}

  bool present(Field field) { return !get(field).absent(); }

  // Each reads one field; a field given as null counts as absent.
  std::string key();     // required; a valid key (§1)
  SharedString owner();  // required; a valid owner (§1)
  std::optional<std::string> optional_key();
  std::optional<SharedString> optional_owner();
  std::optional<std::string> optional_string(Field field);
  std::optional<std::string_view> optional_text(Field field);   // valid while the fields are
  bool flag(Field field);                                       // absent: false
  std::optional<Millis> positive_millis(Field field);           // > 0
  Millis millis(Field field);                                   // >= 0; absent: 0
  std::optional<std::uint64_t> optional_unsigned(Field field);  // >= 0
  std::uint64_t required_unsigned(Field field);                 // >= 0
  std::optional<std::uint64_t> optional_positive(Field field);  // > 0

  // Records a problem unless an earlier one was found.
  void fail(std::string message);
  const std::optional<Error>& error() const { return error_; }

 private:
  const FieldValue& get(Field field) { return fields_[static_cast<std::size_t>(field)]; }
  // The field as an unsigned integer (positive unless allow_zero); records the problem if not.
  std::optional<std::uint64_t> unsigned_field(Field field, bool allow_zero);
  void fail_field(Field field, std::string_view problem);

  const Fields& fields_;
  OwnerNames* owners_;
  std::optional<Error> error_;
};

}  // namespace tenure
