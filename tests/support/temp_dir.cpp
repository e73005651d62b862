#include "tests/support/temp_dir.hpp"

#include <stdlib.h>

#include <stdexcept>
#include <system_error>

namespace tenure::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "tenure-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

}  // namespace tenure::test
