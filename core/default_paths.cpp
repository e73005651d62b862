#include "core/default_paths.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace tenure {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Anything but "no such file" counts as there: a socket we may not stat (a private /run/tenure)
// is better reported by connect() as "permission denied" than skipped.
bool present(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

}  // namespace

std::optional<std::string> default_data_dir() {
  std::string state = env("XDG_STATE_HOME");
  if (!state.empty() && state.front() == '/') return state + "/tenure";
  std::string home = env("HOME");
  if (home.empty()) return std::nullopt;
  return home + "/.local/state/tenure";
}

std::optional<std::string> default_socket_path() {
  auto dir = default_data_dir();
  if (!dir) return std::nullopt;
  return *dir + "/tenured.sock";
}

std::optional<SocketChoice> choose_socket(const std::optional<std::string>& explicit_path,
                                          const std::string& system_socket) {
  if (explicit_path) return SocketChoice{*explicit_path, std::nullopt};
  if (std::string from_env = env("TENURE_SOCKET"); !from_env.empty()) {
    return SocketChoice{from_env, std::nullopt};
  }
  auto user = default_socket_path();
  if (user && present(*user)) return SocketChoice{*user, std::nullopt};
  if (present(system_socket)) return SocketChoice{system_socket, std::nullopt};
  if (user) return SocketChoice{*user, system_socket};
  return std::nullopt;
}

}  // namespace tenure
