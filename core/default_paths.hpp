#pragma once
// Where tenured keeps its data and socket when no path is given: $XDG_STATE_HOME/tenure (an
// absolute XDG_STATE_HOME only, as the XDG spec says), else $HOME/.local/state/tenure. With
// neither there is no default: never a shared temporary directory (§7).
#include <optional>
#include <string>

namespace tenure {

std::optional<std::string> default_data_dir();
std::optional<std::string> default_socket_path();

}  // namespace tenure
