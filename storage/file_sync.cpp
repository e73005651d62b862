#include "storage/file_sync.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/unique_fd.hpp"

namespace tenure::storage {

Status os_error(const std::string& what, const std::string& path) {
  int error = errno;
  return Status(error == ENOSPC ? errc::no_space : errc::io_error,
                what + " " + path + ": " + std::strerror(error));
}

Status sync_directory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return os_error("cannot open", dir);
  if (::fsync(fd.get()) != 0) return os_error("cannot fsync", dir);
  return {};
}

Status sync_directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return sync_directory(dir.empty() ? "." : dir);
}

}  // namespace tenure::storage
