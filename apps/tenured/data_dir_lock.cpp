#include "apps/tenured/data_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tenure {

std::optional<UniqueFd> lock_data_dir(const std::string& data_dir, std::string& error) {
  std::string path = data_dir + "/tenured.lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    int failure = errno;
    char holder[32] = {};
    ssize_t n = ::pread(fd.get(), holder, sizeof holder - 1, 0);
    std::string pid = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    error = failure == EWOULDBLOCK ? "the data dir " + data_dir + " is in use by another tenured" +
                                         (pid.empty() ? "" : " (pid " + pid + ")") +
                                         ", which holds " + path + "; nothing was changed"
                                   : "cannot lock " + path + ": " + std::strerror(failure);
    return std::nullopt;
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  return fd;
}

}  // namespace tenure
