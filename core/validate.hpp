#pragma once
// Limits on keys and owners (§1). An empty optional means valid; otherwise the reason.
#include <optional>
#include <string>
#include <string_view>

namespace tenure {

inline constexpr std::size_t kMaxKeyBytes = 512;
inline constexpr std::size_t kMaxOwnerBytes = 128;

std::optional<std::string> validate_key(std::string_view key);
std::optional<std::string> validate_owner(std::string_view owner);

}  // namespace tenure
