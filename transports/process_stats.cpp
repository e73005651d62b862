#include "transports/process_stats.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tenure {
namespace {

// The fields of /proc/self/stat after the command name (which may hold spaces): index 0 is
// field 3 (state) of proc(5).
std::vector<std::string> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto name_end = text.rfind(')');
  if (name_end == std::string::npos) return {};
  std::istringstream rest(text.substr(name_end + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

// The boot time in seconds since the epoch (`btime` of /proc/stat), 0 if unknown.
std::uint64_t boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

std::uint64_t count_fds() {
  std::error_code ec;
  std::uint64_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return n > 0 ? n - 1 : 0;  // the iterator's own descriptor
}

}  // namespace

std::optional<ProcessStats> read_process_stats() {
  // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24.
  constexpr std::size_t kUtime = 14 - 3, kStime = 15 - 3, kStart = 22 - 3, kVsize = 23 - 3,
                        kRss = 24 - 3;
  auto fields = stat_fields();
  if (fields.size() <= kRss) return std::nullopt;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  ProcessStats s;
  try {
    s.cpu_seconds =
        static_cast<double>(std::stoull(fields[kUtime]) + std::stoull(fields[kStime])) / ticks;
    s.start_time_seconds =
        static_cast<double>(boot_time()) + static_cast<double>(std::stoull(fields[kStart])) / ticks;
    s.virtual_memory_bytes = std::stoull(fields[kVsize]);
    s.resident_memory_bytes =
        std::stoull(fields[kRss]) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  s.open_fds = count_fds();
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) s.max_fds = limit.rlim_cur;
  return s;
}

}  // namespace tenure
