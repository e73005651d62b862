#pragma once
// The bearer token of WebSocket mutations (§7): `<data-dir>/ws.token`, made at first start from
// 256 bits of /dev/urandom written as 64 hex digits, mode 0600. Whoever can read it acts as the
// server's own user, so it is never logged, and a token file others could read is refused.
#include <optional>
#include <string>

namespace tenure {

// The token, created when missing; empty with `error` set when it cannot be had safely.
std::optional<std::string> load_or_create_ws_token(const std::string& data_dir, std::string& error);

}  // namespace tenure
