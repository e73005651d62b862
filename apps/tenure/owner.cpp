#include "apps/tenure/owner.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>

#include "apps/tenure/failure.hpp"
#include "core/validate.hpp"

namespace tenure::cli {
namespace {

// RFC 4122 version 4: 122 random bits; std::random_device reads the kernel's CSPRNG on Linux.
std::string random_uuid_v4() {
  std::random_device random;
  std::array<std::uint8_t, 16> bytes;
  for (std::size_t i = 0; i < bytes.size(); i += 4) {
    std::uint32_t word = random();
    for (std::size_t k = 0; k < 4; ++k) bytes[i + k] = static_cast<std::uint8_t>(word >> (8 * k));
  }
  bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0F) | 0x40);  // version 4
  bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3F) | 0x80);  // RFC 4122 variant
  char text[37];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

// Who and where this process is, for people reading `get` or `history`: "user@host:pid".
std::string process_name() {
  std::string user;
  if (const passwd* pw = ::getpwuid(::getuid())) user = pw->pw_name;
  if (user.empty()) user = "uid" + std::to_string(::getuid());
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string name = user + "@" + host;
  // Room for ":pid-suffix" within the owner limit, however long the host name.
  name.resize(std::min<std::size_t>(name.size(), kMaxOwnerBytes - 32));
  return name + ":" + std::to_string(::getpid());
}

}  // namespace

std::optional<std::string> configured_owner(const std::optional<std::string>& flag) {
  std::optional<std::string> owner = flag;
  if (!owner) {
    const char* env = std::getenv("TENURE_OWNER");
    if (env == nullptr || *env == '\0') return std::nullopt;
    owner = env;
  }
  if (auto problem = validate_owner(*owner)) {
    throw CliError((flag ? "--owner: " : "TENURE_OWNER: ") + *problem);
  }
  return owner;
}

std::string required_owner(const std::optional<std::string>& flag, std::string_view op) {
  if (auto owner = configured_owner(flag)) return *owner;
  throw CliError(std::string(op) + " needs the lease's owner: pass --owner or set TENURE_OWNER");
}

std::string owner_or_fresh(const std::optional<std::string>& flag) {
  if (auto owner = configured_owner(flag)) return *owner;
  std::string fresh = random_uuid_v4();
  std::cerr << "owner: " << fresh << " (export TENURE_OWNER=" << fresh << " to reuse)\n";
  return fresh;
}

std::string unique_owner(const std::optional<std::string>& prefix) {
  constexpr std::size_t kSuffixBytes = 9;  // "-" and 8 hex digits
  std::string base = prefix ? *prefix : process_name();
  if (base.size() > kMaxOwnerBytes - kSuffixBytes) {
    throw CliError("--owner: the prefix may have at most " +
                   std::to_string(kMaxOwnerBytes - kSuffixBytes) + " bytes");
  }
  char suffix[kSuffixBytes + 1];
  std::snprintf(suffix, sizeof suffix, "-%08x", static_cast<unsigned>(std::random_device()()));
  std::string owner = base + suffix;
  if (auto problem = validate_owner(owner)) throw CliError("--owner: " + *problem);
  return owner;
}

}  // namespace tenure::cli
