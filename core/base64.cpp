#include "core/base64.hpp"

#include <array>
#include <cstdint>

namespace tenure {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> decode_table() {
  std::array<std::int8_t, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  return table;
}
constexpr auto kDecode = decode_table();

}  // namespace

void base64_append(std::string_view in, std::string& out) {
  out.reserve(out.size() + (in.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t chunk = static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size())
      chunk |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size()) chunk |= static_cast<unsigned char>(in[i + 2]);
    out.push_back(kAlphabet[(chunk >> 18) & 63]);
    out.push_back(kAlphabet[(chunk >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(chunk >> 6) & 63] : '=');
    out.push_back(i + 2 < in.size() ? kAlphabet[chunk & 63] : '=');
  }
}

std::string base64(std::string_view in) {
  std::string out;
  base64_append(in, out);
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    std::uint32_t chunk = 0;
    int pad = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      char c = in[i + j];
      if (c == '=' && last && j >= 2) {
        ++pad;
        chunk <<= 6;
        continue;
      }
      auto v = kDecode[static_cast<unsigned char>(c)];
      if (v < 0 || pad > 0) return std::nullopt;
      chunk = (chunk << 6) | static_cast<std::uint32_t>(v);
    }
    out.push_back(static_cast<char>((chunk >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((chunk >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(chunk & 0xff));
  }
  return out;
}

}  // namespace tenure
