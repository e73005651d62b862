#include "client/owner.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "core/validate.hpp"

namespace tenure::client {

std::string new_owner() {
  std::string user;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_name != nullptr) {
    user = pw->pw_name;
  } else {
    user = "uid" + std::to_string(::getuid());
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string head = user + "@" + host + ":" + std::to_string(::getpid());
  for (char& c : head) {
    if (c <= ' ' || c >= '\x7f') c = '_';  // owners are printable ASCII (§1)
  }
  std::random_device random;  // the kernel's CSPRNG on Linux
  char suffix[18];
  std::snprintf(suffix, sizeof suffix, "-%08x%08x", random(), random());
  head.resize(std::min(head.size(), kMaxOwnerBytes - 17));
  return head + suffix;
}

}  // namespace tenure::client
