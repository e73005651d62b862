#pragma once
// Which daemon to talk to.
#include <optional>
#include <string>

namespace tenure::cli {

// --socket, else $TENURE_SOCKET, else where tenured puts its socket by default:
// $XDG_STATE_HOME/tenure/tenured.sock, else $HOME/.local/state/tenure/tenured.sock.
// Throws CliError when none of these is set.
std::string resolve_socket_path(const std::optional<std::string>& flag);

}  // namespace tenure::cli
