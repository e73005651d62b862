#include "apps/tenured/restore.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "storage/ledger.hpp"
#include "storage/marks.hpp"

namespace tenure {

namespace fs = std::filesystem;

bool restore_ledger(const std::string& backup, const std::string& ledger_dir, std::string& error) {
  std::error_code ec;
  if (!fs::exists(fs::path(backup) / "CURRENT", ec)) {
    error = "--restore-from " + backup + " is not a backup of a ledger (it has no CURRENT file)";
    return false;
  }
  if (storage::Status checked = storage::Ledger::check_backup(backup); !checked.ok()) {
    error = checked.message();
    return false;
  }
  // Marked before the backup goes in: a restore that stops half way is refused, not opened.
  if (storage::Status marked = storage::mark_recovery(ledger_dir, "--restore-from " + backup);
      !marked.ok()) {
    error = "cannot start the restore: " + marked.message();
    return false;
  }
  if (fs::exists(ledger_dir, ec)) {
    auto now = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    std::string kept = ledger_dir + ".replaced-" + std::to_string(now);
    fs::rename(ledger_dir, kept, ec);
    if (ec) {
      error = "cannot move the ledger " + ledger_dir + " aside: " + ec.message();
      return false;
    }
    spdlog::warn("restoring {}: the ledger it replaces is kept in {}", backup, kept);
  }
  fs::copy(backup, ledger_dir, fs::copy_options::recursive, ec);
  if (ec) {
    error = "cannot copy the backup " + backup + " to " + ledger_dir + ": " + ec.message();
    return false;
  }
  return true;
}

}  // namespace tenure
