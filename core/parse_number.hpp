#pragma once
// A whole text as an unsigned number: no sign, no space, nothing before or after it.
#include <charconv>
#include <optional>
#include <string_view>

namespace tenure {

template <typename Unsigned>
std::optional<Unsigned> parse_number(std::string_view text, int base = 10) {
  Unsigned value{};
  auto [end, problem] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || problem != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace tenure
