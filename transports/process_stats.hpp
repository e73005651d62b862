#pragma once
// The server process's own resource use, for the standard process_* metrics that Prometheus
// client libraries export (start time, CPU, memory, descriptors). Linux: read from /proc.
#include <cstdint>
#include <optional>

namespace tenure {

struct ProcessStats {
  double start_time_seconds = 0;  // since the Unix epoch
  double cpu_seconds = 0;         // user + system
  std::uint64_t resident_memory_bytes = 0;
  std::uint64_t virtual_memory_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;
};

// Empty when /proc cannot be read.
std::optional<ProcessStats> read_process_stats();

}  // namespace tenure
