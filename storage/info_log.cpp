#include "storage/info_log.hpp"

#include <rocksdb/env.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>

namespace tenure::storage {
namespace {

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
    if (!spdlog::should_log(ours)) return;
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    spdlog::log(ours, "rocksdb: {}", line);
  }
};

}  // namespace

std::shared_ptr<rocksdb::Logger> make_info_log() { return std::make_shared<InfoLog>(); }

}  // namespace tenure::storage
