#pragma once
// Which daemon to talk to.
#include <optional>
#include <string>

#include "core/default_paths.hpp"

namespace tenure::cli {

// --socket, else choose_socket's rule ($TENURE_SOCKET, the per-user socket, the system one).
// Throws CliError when none can be told.
SocketChoice resolve_socket_path(const std::optional<std::string>& flag);

}  // namespace tenure::cli
