#pragma once
// The daemon's log: stderr by default, or --log-file, which SIGHUP reopens so that logrotate can
// move it away.
#include <string>

namespace tenure {

// False with `error` set for an unknown level or a file that cannot be opened.
bool setup_logging(const std::string& level, const std::string& file, std::string& error);
void reopen_logs();

}  // namespace tenure
