#pragma once
// Names the calling thread, so that `top -H`, `perf` and /proc/PID/task/*/comm tell the io
// threads from the ledger's writer and sync threads.
#include <string_view>

namespace tenure {

// Linux keeps at most 15 bytes of a thread's name: a longer one is cut.
void name_this_thread(std::string_view name);

}  // namespace tenure
