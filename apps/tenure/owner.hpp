#pragma once
// Who the client is: the owner id sent with lease operations (contract §1).
#include <optional>
#include <string>
#include <string_view>

namespace tenure::cli {

// --owner, else $TENURE_OWNER; validated. Empty when neither is given.
std::optional<std::string> configured_owner(const std::optional<std::string>& flag);

// For operations on an existing tenure (renew, release, keepalive): a fresh id could never match,
// so a missing owner is an error naming `op`.
std::string required_owner(const std::optional<std::string>& flag, std::string_view op);

// For acquire: the configured owner, else a fresh random UUIDv4, printed to stderr so that the user
// can reuse it for renew and release.
std::string owner_or_fresh(const std::optional<std::string>& flag);

// For run and hold: an owner no other invocation has, so that two of them never share a tenure
// (contract §9). `prefix` (--owner) or "user@host:pid", then "-" and 8 random hex digits.
// $TENURE_OWNER is never used.
std::string unique_owner(const std::optional<std::string>& prefix);

}  // namespace tenure::cli
