#pragma once
// How `run` and `hold` take their key: blocking by default, as flock(1) and `etcdctl lock` do.
#include <optional>
#include <string>

#include "client/client.hpp"
#include "core/clock.hpp"

namespace tenure::cli {

// How long to queue for a held key: empty waits forever, 0 not at all.
using WaitLimit = std::optional<Millis>;

// Takes `key` on `client` as a Lease with `options` (a fresh owner of the caller's; the wait is
// this function's). When the key is held and the limit allows, prints one line on stderr
// ("waiting for KEY (held by X, token N)…") and queues. A failover's errors (the connection
// lost, `unavailable`) are retried, through the next endpoint, for up to `retry_for` after the
// first: an acquire repeated with the same owner is safe. Returns the lease, or the last failure:
// `held` when the wait ran out, or an error.
client::Result<client::Lease> take_lease(client::Client& client, const std::string& key,
                                         client::LeaseOptions options, WaitLimit wait,
                                         Millis retry_for);

// One line explaining a failure to take `key`, as explain_failure does a reply.
std::string explain_failure(const client::Failure& failure, const std::string& key);
// Its exit code: 4 for held, 1 for the rest.
int exit_code(const client::Failure& failure);

// Warns on stderr when the server clamped the TTL asked for (`flag` names the option).
void warn_if_clamped(std::optional<Millis> granted, std::optional<Millis> asked, const char* flag);

}  // namespace tenure::cli
