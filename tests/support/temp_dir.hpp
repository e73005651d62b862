#pragma once
// A fresh 0700 directory under $TMPDIR, removed with everything in it at scope exit.
#include <filesystem>
#include <string>

namespace tenure::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str(const std::string& child = "") const { return (path_ / child).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tenure::test
