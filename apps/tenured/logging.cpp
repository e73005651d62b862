#include "apps/tenured/logging.hpp"

#include <spdlog/details/file_helper.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>

namespace tenure {
namespace {

// A file sink that can close and reopen its file by name (spdlog's own cannot).
class ReopenableFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ReopenableFileSink(const std::string& path) { file_.open(path); }
  void reopen() {
    std::lock_guard lock(mutex_);
    file_.reopen(false);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    file_.write(formatted);
  }
  void flush_() override { file_.flush(); }

 private:
  spdlog::details::file_helper file_;
};

std::shared_ptr<ReopenableFileSink> file_sink;

}  // namespace

bool setup_logging(const std::string& level, const std::string& file, std::string& error) {
  auto parsed = spdlog::level::from_str(level);
  // from_str answers `off` for any name it does not know.
  if (parsed == spdlog::level::off && level != "off") {
    error = "unknown log level " + level;
    return false;
  }
  std::shared_ptr<spdlog::logger> logger;
  if (file.empty()) {
    logger = spdlog::stderr_color_mt("tenured");
  } else {
    try {
      file_sink = std::make_shared<ReopenableFileSink>(file);
    } catch (const spdlog::spdlog_ex& e) {
      error = e.what();
      return false;
    }
    logger = std::make_shared<spdlog::logger>("tenured", file_sink);
  }
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::info);  // few lines at info and above: write them at once
  spdlog::set_default_logger(logger);
  return true;
}

void reopen_logs() {
  if (!file_sink) return;
  file_sink->reopen();
  spdlog::info("log file reopened");
}

}  // namespace tenure
