#include "apps/tenure/socket_path.hpp"

#include <cstdlib>
#include <string_view>

#include "apps/tenure/failure.hpp"
#include "core/default_paths.hpp"

namespace tenure::cli {
namespace {

std::optional<std::string_view> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return value;
}

}  // namespace

std::string resolve_socket_path(const std::optional<std::string>& flag) {
  if (flag) return *flag;
  if (auto path = env("TENURE_SOCKET")) return std::string(*path);
  if (auto path = default_socket_path()) return *path;
  throw CliError(
      "cannot tell where tenured's socket is: HOME is unset; pass --socket or set "
      "TENURE_SOCKET");
}

}  // namespace tenure::cli
