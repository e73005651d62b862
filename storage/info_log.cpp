#include "storage/info_log.hpp"

#include <rocksdb/env.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <string_view>

namespace tenure::storage {
namespace {

// What RocksDB reports louder than it is, for the ledger's own use of it: it looks for the ledger
// dir before it creates it, opens the table files of a ledger older than their unique ids, and
// is asked for a backup's checkpoint while a flush holds file deletions off too.
constexpr std::string_view kRoutine[] = {
    "dir NotFound",
    "SST file opened without unique ID to verify",
    "File Deletions Disabled, but already disabled",
};

bool routine(std::string_view line) {
  for (std::string_view words : kRoutine) {
    if (line.find(words) != std::string_view::npos) return true;
  }
  return false;
}

class InfoLog : public rocksdb::Logger {
 public:
  InfoLog() : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL) {}

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    // RocksDB's info lines (options, compactions) are for debugging; its warnings are ours.
    spdlog::level::level_enum ours = spdlog::level::debug;
    if (level == rocksdb::InfoLogLevel::WARN_LEVEL) ours = spdlog::level::warn;
    if (level >= rocksdb::InfoLogLevel::ERROR_LEVEL &&
        level != rocksdb::InfoLogLevel::HEADER_LEVEL) {
      ours = spdlog::level::err;
    }
    if (!spdlog::should_log(ours) && !spdlog::should_log(spdlog::level::debug)) return;
    char buffer[1024];
    std::vsnprintf(buffer, sizeof buffer, format, ap);
    std::string_view line(buffer);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
    if (routine(line)) ours = spdlog::level::debug;
    if (!spdlog::should_log(ours)) return;
    spdlog::log(ours, "rocksdb: {}", line);
  }
};

}  // namespace

std::shared_ptr<rocksdb::Logger> make_info_log() { return std::make_shared<InfoLog>(); }

}  // namespace tenure::storage
