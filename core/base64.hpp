#pragma once
// Standard base64 (RFC 4648, with padding), as etcd's JSON gateway writes keys and values.
#include <optional>
#include <string>
#include <string_view>

namespace tenure {

// Appends the encoding of `in` to `out`.
void base64_append(std::string_view in, std::string& out);
std::string base64(std::string_view in);
// nullopt for anything that is not padded standard base64.
std::optional<std::string> base64_decode(std::string_view in);

}  // namespace tenure
