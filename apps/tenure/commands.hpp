#pragma once
// The request-reply subcommands: each sends one request (or, for list and history, one per page)
// and reports the reply. Each returns the process exit code.
#include <cstdint>
#include <optional>
#include <string>

#include "apps/tenure/requests.hpp"
#include "apps/tenure/session.hpp"

namespace tenure::cli {

using OptionalText = std::optional<std::string>;

// `params.owner` is filled in here: --owner, $TENURE_OWNER, or a fresh announced id.
int acquire_command(const Globals& g, const OptionalText& owner, AcquireParams params);
int renew_command(const Globals& g, const std::string& key, const OptionalText& owner,
                  std::optional<Millis> ttl, std::optional<Token> token);
int release_command(const Globals& g, const std::string& key, const OptionalText& owner,
                    std::optional<Token> token);
int keepalive_command(const Globals& g, const OptionalText& owner, std::optional<Millis> ttl);
// Only an explicit --owner narrows the check; $TENURE_OWNER does not, so that a script can check
// tokens it did not take itself.
int check_command(const Globals& g, const std::string& key, Token token, const OptionalText& owner);
int get_command(const Globals& g, const std::string& key);
// Without a limit, follows `next` to the last page.
// Without --limit, every page from the first (or from `after` / `before`).
int list_command(const Globals& g, const OptionalText& prefix, std::optional<std::uint64_t> limit,
                 const OptionalText& after);
int history_command(const Globals& g, const std::string& key, std::optional<std::uint64_t> limit,
                    std::optional<Token> before);
int revoke_command(const Globals& g, const std::string& key, const OptionalText& reason);
int stats_command(const Globals& g);
int ping_command(const Globals& g);

}  // namespace tenure::cli
