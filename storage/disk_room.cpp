#include "storage/disk_room.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tenure::storage {
namespace {

constexpr std::uint64_t kMinReserve = 256ull << 10;
constexpr std::uint64_t kMaxReserve = 16ull << 20;
// Another process may fill the disk meanwhile: with plenty of room it is asked again this often.
constexpr auto kMeasureEvery = std::chrono::milliseconds(10);

}  // namespace

DiskRoom::DiskRoom(std::string path) : path_(std::move(path)) {}

Status DiskRoom::measure(Clock::time_point now) {
  struct statvfs fs {};
  if (::statvfs(path_.c_str(), &fs) != 0) {
    return Status(errc::io_error,
                  "cannot tell the free space of " + path_ + ": " + std::strerror(errno));
  }
  std::uint64_t block = fs.f_frsize != 0 ? fs.f_frsize : fs.f_bsize;
  std::uint64_t total = static_cast<std::uint64_t>(fs.f_blocks) * block;
  // Root may use the blocks a file system keeps back for it; others may not.
  std::uint64_t usable = ::geteuid() == 0 ? fs.f_bfree : fs.f_bavail;
  reserve_ = std::clamp(total / 16, kMinReserve, kMaxReserve);
  free_ = usable * block;
  written_ = 0;
  measured_ = now;
  return {};
}

Status DiskRoom::admit(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  auto now = Clock::now();
  bool near = free_ < written_ + bytes + 2 * reserve_;
  if (near || now - measured_ >= kMeasureEvery) {
    if (Status status = measure(now); !status.ok()) return status;
  }
  if (free_ < written_ + bytes + reserve_) {
    return Status(errc::no_space,
                  "no space left on the ledger's disk: " + std::to_string(free_ >> 10) +
                      " KiB free, and tenured keeps " + std::to_string(reserve_ >> 10) +
                      " KiB for its writes and flushes");
  }
  written_ += bytes;
  return {};
}

}  // namespace tenure::storage
