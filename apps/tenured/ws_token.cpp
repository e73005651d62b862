#include "apps/tenured/ws_token.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "core/unique_fd.hpp"

namespace tenure {
namespace {

constexpr std::size_t kRandomBytes = 32;
// A token set by hand must still be hard to guess: at least 128 bits' worth of hex.
constexpr std::size_t kMinLength = 32;
constexpr std::size_t kMaxLength = 1024;

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

std::optional<std::string> random_hex(std::string& error) {
  UniqueFd urandom(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  std::array<unsigned char, kRandomBytes> bytes{};
  std::size_t got = 0;
  while (urandom.get() >= 0 && got < bytes.size()) {
    ssize_t n = ::read(urandom.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got < bytes.size()) {
    error = system_error("cannot read /dev/urandom");
    return std::nullopt;
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

// The token in an existing file, which must be ours, private, and hold a plausible token.
std::optional<std::string> read_token(const std::string& path, int fd, std::string& error) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    error = system_error("cannot stat " + path);
    return std::nullopt;
  }
  if (!S_ISREG(info.st_mode) || info.st_uid != ::geteuid() || (info.st_mode & 077) != 0) {
    error = path + " must be a regular file of ours that only we can read (chmod 600 " + path + ")";
    return std::nullopt;
  }
  std::string text(kMaxLength + 1, '\0');
  ssize_t n = ::read(fd, text.data(), text.size());
  if (n < 0) {
    error = system_error("cannot read " + path);
    return std::nullopt;
  }
  text.resize(static_cast<std::size_t>(n));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  bool printable = text.find_first_of(" \t\r\n") == std::string::npos &&
                   std::all_of(text.begin(), text.end(), [](char c) { return c > 32 && c < 127; });
  if (text.size() < kMinLength || text.size() > kMaxLength || !printable) {
    error = path + " must hold one token of " + std::to_string(kMinLength) + " to " +
            std::to_string(kMaxLength) + " printable characters (delete it to get a new one)";
    return std::nullopt;
  }
  return text;
}

}  // namespace

std::optional<std::string> load_or_create_ws_token(const std::string& data_dir,
                                                   std::string& error) {
  std::string path = data_dir + "/ws.token";
  UniqueFd existing(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (existing.get() >= 0) return read_token(path, existing.get(), error);
  if (errno != ENOENT) {
    error = system_error("cannot open " + path);
    return std::nullopt;
  }
  auto token = random_hex(error);
  if (!token) return std::nullopt;
  // O_EXCL: never write through a file someone else slipped in meanwhile.
  UniqueFd created(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (created.get() < 0) {
    error = system_error("cannot create " + path);
    return std::nullopt;
  }
  std::string text = *token + "\n";
  if (::write(created.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(created.get()) != 0) {
    error = system_error("cannot write " + path);
    ::unlink(path.c_str());  // a torn token would be refused at every later start
    return std::nullopt;
  }
  return token;
}

}  // namespace tenure
