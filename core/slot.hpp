#pragma once
// Cluster mode splits the keyspace into a fixed number of slots, each owned by one node. A key's
// slot must be the same in every process and every build, so it is FNV-1a, never std::hash.
#include <cstdint>
#include <string_view>

namespace tenure {

inline constexpr std::uint32_t kSlots = 64;

// FNV-1a 64-bit of the key's bytes, modulo kSlots.
constexpr std::uint64_t fnv1a_64(std::string_view bytes) {
  std::uint64_t hash = 14695981039346656037ull;
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

constexpr std::uint32_t slot_of(std::string_view key) {
  return static_cast<std::uint32_t>(fnv1a_64(key) % kSlots);
}

}  // namespace tenure
