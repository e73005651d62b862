#pragma once
// Makes a Unix socket path ready to bind (§7): a socket file left behind by a crashed daemon is
// replaced, but one that a live daemon still answers on is not.
#include <string>

namespace tenure {

// False with `error` set when the path is taken: a live daemon, or something not a socket.
bool claim_socket_path(const std::string& path, std::string& error);

}  // namespace tenure
