#pragma once
// Where tenured keeps its data and socket when no path is given: $XDG_STATE_HOME/tenure (an
// absolute XDG_STATE_HOME only, as the XDG spec says), else $HOME/.local/state/tenure. With
// neither there is no default: never a shared temporary directory (§7).
#include <optional>
#include <string>

namespace tenure {

// The socket of the machine-wide service (packaging/systemd/tenured.socket, the Debian package).
inline constexpr const char* kSystemSocketPath = "/run/tenure/tenured.sock";

std::optional<std::string> default_data_dir();
std::optional<std::string> default_socket_path();

// The socket a client connects to.
struct SocketChoice {
  std::string path;
  // Set when `path` is a default that does not exist: the other default that was looked for,
  // for the client's "cannot connect" error.
  std::optional<std::string> also_looked_for;
};

// The explicit path, else $TENURE_SOCKET, else the per-user default socket if it exists, else
// `system_socket` if it exists, else the per-user default. nullopt when none can be told (no
// HOME and no system socket). The CLI and both client libraries resolve by this one rule.
std::optional<SocketChoice> choose_socket(const std::optional<std::string>& explicit_path,
                                          const std::string& system_socket = kSystemSocketPath);

}  // namespace tenure
