#pragma once
// Which daemon to talk to.
#include <optional>
#include <string>
#include <vector>

#include "core/default_paths.hpp"

namespace tenure::cli {

// --socket, else choose_socket's rule ($TENURE_SOCKET, the per-user socket, the system one).
// Throws CliError when none can be told.
SocketChoice resolve_socket_path(const std::optional<std::string>& flag);

// The same, split at commas: the nodes of a cluster, to be tried in order.
std::vector<SocketChoice> resolve_socket_paths(const std::optional<std::string>& flag);

}  // namespace tenure::cli
