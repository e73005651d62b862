#include "storage/marks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "core/parse_number.hpp"
#include "storage/file_sync.hpp"

namespace tenure::storage {
namespace {

// Replaces `path` with `text` atomically: write, fsync, rename, fsync the directory.
Status replace_file(const std::string& path, const std::string& text) {
  std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return os_error("cannot create", temp);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  Status status = ok ? Status() : os_error("cannot write", temp);
  ::close(fd);
  if (!status.ok()) return status;
  if (::rename(temp.c_str(), path.c_str()) != 0) return os_error("cannot rename", temp);
  return sync_directory_of(path);
}

bool parse_field(std::istringstream& in, const char* name, Revision& value) {
  std::string word, number;
  if (!(in >> word >> number) || word != name) return false;
  auto parsed = parse_number<Revision>(number);
  if (parsed) value = *parsed;
  return parsed.has_value();
}

}  // namespace

Status read_marks(const std::string& path, std::optional<Marks>& marks) {
  marks.reset();
  std::ifstream file(path);
  if (!file) {
    if (errno == ENOENT) return {};
    return os_error("cannot read", path);
  }
  std::stringstream text;
  text << file.rdbuf();
  std::istringstream in(text.str());
  Marks m;
  if (!parse_field(in, "reserved", m.reserved) || !parse_field(in, "durable", m.durable)) {
    return Status(errc::corruption, "the mark file " + path + " cannot be read: " + text.str());
  }
  marks = m;
  return {};
}

Status write_marks(const std::string& path, const Marks& marks) {
  return replace_file(path, "reserved " + std::to_string(marks.reserved) + "\ndurable " +
                                std::to_string(marks.durable) + "\n");
}

namespace {

std::string recovery_mark_path(const std::string& ledger_path) {
  return ledger_path + ".recovering";
}

std::string repair_mark_path(const std::string& ledger_path) { return ledger_path + ".repairing"; }

Status remove_mark(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return os_error("cannot remove", path);
  return sync_directory_of(path);
}

}  // namespace

Status mark_recovery(const std::string& ledger_path, const std::string& what) {
  return replace_file(recovery_mark_path(ledger_path), what + "\n");
}

Status read_recovery_mark(const std::string& ledger_path, std::optional<std::string>& what) {
  what.reset();
  std::string path = recovery_mark_path(ledger_path);
  std::ifstream file(path);
  if (!file) {
    if (errno == ENOENT) return {};
    return os_error("cannot read", path);
  }
  std::string line;
  std::getline(file, line);
  what = line.empty() ? "--recover" : line;
  return {};
}

Status clear_recovery_mark(const std::string& ledger_path) {
  return remove_mark(recovery_mark_path(ledger_path));
}

Status mark_repair(const std::string& ledger_path) {
  return replace_file(repair_mark_path(ledger_path), "RepairDB\n");
}

bool repair_marked(const std::string& ledger_path) {
  return ::access(repair_mark_path(ledger_path).c_str(), F_OK) == 0;
}

Status clear_repair_mark(const std::string& ledger_path) {
  return remove_mark(repair_mark_path(ledger_path));
}

}  // namespace tenure::storage
