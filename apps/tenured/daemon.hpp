#pragma once
// The daemon's life: start-up checks (§7), the engine and its threads, the socket, and an orderly
// shutdown on SIGTERM or SIGINT. Returns the process's exit code.
#include "apps/tenured/options.hpp"

namespace tenure {

int run_daemon(const Options& options);

}  // namespace tenure
