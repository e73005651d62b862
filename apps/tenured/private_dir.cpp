#include "apps/tenured/private_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace tenure {
namespace {

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// mkdir -p with mode 0700 for every directory it creates.
bool create_missing(const std::filesystem::path& path, std::string& error) {
  std::filesystem::path partial;
  for (const auto& part : path) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      error = "cannot create " + partial.string() + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace

bool make_private_dir(const std::string& path, SharedDirPolicy policy, std::string& error) {
  if (!create_missing(std::filesystem::path(path), error)) return false;
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    error = "cannot stat " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISDIR(info.st_mode)) {
    error = path + " is not a directory";
    return false;
  }
  // Someone else's data dir is theirs to change under us.
  if (policy == SharedDirPolicy::refuse && info.st_uid != ::geteuid()) {
    error = path + " belongs to uid " + std::to_string(info.st_uid) + ", not to this user (uid " +
            std::to_string(::geteuid()) + ")";
    return false;
  }
  bool shared = (info.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  bool sticky_ok = policy == SharedDirPolicy::allow_sticky && (info.st_mode & S_ISVTX) != 0;
  if (shared && !sticky_ok) {
    error = path + " is writable by group or others (mode " + octal(info.st_mode) +
            "); run chmod 700 " + path;
    return false;
  }
  return true;
}

bool open_dir_to_group(const std::string& path, gid_t group, std::string& error) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    error = "cannot stat " + path + ": " + std::strerror(errno);
    return false;
  }
  if (info.st_uid == ::geteuid() && (info.st_mode & S_ISVTX) == 0) {
    if (::chown(path.c_str(), static_cast<uid_t>(-1), group) != 0 ||
        ::chmod(path.c_str(), (info.st_mode & 07777) | S_IXGRP) != 0) {
      error = "cannot let group " + std::to_string(group) + " traverse " + path + ": " +
              std::strerror(errno);
      return false;
    }
    return true;
  }
  bool through = (info.st_mode & S_IXOTH) != 0 || (info.st_gid == group && info.st_mode & S_IXGRP);
  if (!through) {
    error = path + " (mode " + octal(info.st_mode) + ", not ours to change) does not let group " +
            std::to_string(group) + " reach the socket";
    return false;
  }
  return true;
}

}  // namespace tenure
