#include "core/validate.hpp"

namespace tenure {
namespace {

// Returns the length of the UTF-8 sequence starting at s[i], or 0 when it is not well formed.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  std::uint32_t cp = c & (0xFF >> (len + 1));
  for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
  static constexpr std::uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

std::optional<std::string> validate_key(std::string_view key) {
  if (key.empty()) return "key must not be empty";
  if (key.size() > kMaxKeyBytes) return "key is longer than 512 bytes";
  for (std::size_t i = 0; i < key.size();) {
    unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7F) return "key must not contain control characters";
    std::size_t len = utf8_sequence_length(key, i);
    if (len == 0) return "key is not valid UTF-8";
    i += len;
  }
  return std::nullopt;
}

std::optional<std::string> validate_owner(std::string_view owner) {
  if (owner.empty()) return "owner must not be empty";
  if (owner.size() > kMaxOwnerBytes) return "owner is longer than 128 bytes";
  for (char ch : owner) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c > 0x7E) return "owner must be printable ASCII";
  }
  return std::nullopt;
}

}  // namespace tenure
