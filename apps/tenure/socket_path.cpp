#include "apps/tenure/socket_path.hpp"

#include <cstdlib>
#include <string_view>

#include "apps/tenure/failure.hpp"

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
  // The XDG spec says a relative XDG_STATE_HOME is invalid and must be ignored.
  if (auto state = env("XDG_STATE_HOME"); state && state->front() == '/') {
    return std::string(*state) + "/tenure/tenured.sock";
  }
  if (auto home = env("HOME")) return std::string(*home) + "/.local/state/tenure/tenured.sock";
  throw CliError(
      "cannot tell where tenured's socket is: HOME is unset; pass --socket or set "
      "TENURE_SOCKET");
}

}  // namespace tenure::cli
