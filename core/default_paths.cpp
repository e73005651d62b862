#include "core/default_paths.hpp"

#include <cstdlib>

namespace tenure {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
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

}  // namespace tenure
