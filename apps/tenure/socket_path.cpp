#include "apps/tenure/socket_path.hpp"

#include <string_view>

#include "apps/tenure/failure.hpp"

namespace tenure::cli {

SocketChoice resolve_socket_path(const std::optional<std::string>& flag) {
  if (auto choice = choose_socket(flag)) return *choice;
  throw CliError(std::string("cannot tell where tenured's socket is: HOME is unset and ") +
                 kSystemSocketPath + " does not exist; pass --socket or set TENURE_SOCKET");
}

std::vector<SocketChoice> resolve_socket_paths(const std::optional<std::string>& flag) {
  SocketChoice choice = resolve_socket_path(flag);
  if (choice.path.find(',') == std::string::npos) return {choice};
  std::vector<SocketChoice> out;
  std::string_view rest = choice.path;
  for (;;) {
    auto comma = rest.find(',');
    std::string_view path = rest.substr(0, comma);
    if (path.empty()) throw CliError("empty socket path in the list " + choice.path);
    out.push_back(SocketChoice{std::string(path), std::nullopt});
    if (comma == std::string_view::npos) return out;
    rest.remove_prefix(comma + 1);
  }
}

}  // namespace tenure::cli
