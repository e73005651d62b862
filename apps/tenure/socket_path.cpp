#include "apps/tenure/socket_path.hpp"

#include "apps/tenure/failure.hpp"

namespace tenure::cli {

SocketChoice resolve_socket_path(const std::optional<std::string>& flag) {
  if (auto choice = choose_socket(flag)) return *choice;
  throw CliError(std::string("cannot tell where tenured's socket is: HOME is unset and ") +
                 kSystemSocketPath + " does not exist; pass --socket or set TENURE_SOCKET");
}

}  // namespace tenure::cli
