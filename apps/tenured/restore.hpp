#pragma once
// `tenured --restore-from DIR`: puts a backup in place of the ledger. The ledger it replaces is
// kept beside it, renamed, and the data dir's marks file stays: the start that follows goes on
// above every revision the marks say was reserved (storage::OpenMode::restored).
#include <string>

namespace tenure {

bool restore_ledger(const std::string& backup, const std::string& ledger_dir, std::string& error);

}  // namespace tenure
