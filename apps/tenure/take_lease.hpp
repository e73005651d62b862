#pragma once
// How `run` and `hold` take their key: blocking by default, as flock(1) and `etcdctl lock` do.
#include <optional>

#include "apps/tenure/requests.hpp"
#include "apps/tenure/session.hpp"

namespace tenure::cli {

// How long to queue for a held key: empty waits forever, 0 not at all.
using WaitLimit = std::optional<Millis>;

// Acquires `lease` (a fresh owner of the caller's) on `client`. When the key is held and the limit
// allows, prints one line on stderr ("waiting for KEY (held by X, token N)…") and queues. Returns
// the last reply: `acquired`, or `held` when the wait ran out, or an error. An `acquired` reply
// that is not a fresh tenure (the owner was somebody's already) is refused with CliError, so that
// the caller never renews or releases a tenure it did not create.
Message take_lease(Client& client, const AcquireParams& lease, WaitLimit wait);

// Warns on stderr when the server clamped the TTL asked for (`flag` names the option).
void warn_if_clamped(const Message& reply, std::optional<Millis> asked, const char* flag);

}  // namespace tenure::cli
