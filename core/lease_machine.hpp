#pragma once
// The lease state machine as pure functions over one key's state (§3, §4). No I/O, no clock:
// `now` is passed in. Each function mutates `state` and appends what must be made durable to
// `change`; the caller persists `change` before it replies.
#include <boost/container/small_vector.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lease.hpp"

namespace tenure {

struct Limits {
  Millis default_ttl = 900'000;
  Millis min_ttl = 10;
  Millis max_ttl = 86'400'000;
  Millis max_lock_delay = 60'000;
  // Set after a recovery or restore (§6): new tenures start above it, whatever a key's row says.
  Token token_floor = 0;
};

// A tenure lost (expired or revoked) while the connection that acquired it may still be open:
// its event in Change::events, and that connection. Also a tenure re-acquired on another
// connection, which is told of its loss from then on: its `renewed` event, and the connection
// that no longer is (cluster mode: a proxy's node stops watching for the loss on its behalf).
struct LostTenure {
  std::size_t event_index = 0;
  ConnId conn = 0;
};

// What one step changed: the events to log, the tenure records to write, whether the key's row
// must be rewritten, and which connections must hear that their leases were lost. A step can end
// two tenures involuntarily (a lease due expires, a waiter takes the key, and a revoke ends that).
struct Change {
  Events events;
  TenureRecords tenures;
  bool state_dirty = false;
  boost::container::small_vector<LostTenure, 2> lost;

  bool empty() const { return events.empty() && tenures.empty() && !state_dirty; }
};

enum class NotHolderReason { expired, held_by_other, free, token_mismatch };
std::string_view to_string(NotHolderReason reason);

Millis clamp_ttl(std::optional<Millis> requested, const Limits& limits);

// Ends the lease if its time ran out by `now` (lazy expiry; the timer calls it too).
void expire_if_due(KeyState& state, std::string_view key, Millis now, Change& change);

struct AcquireParams {
  SharedString owner;
  std::optional<Millis> ttl_ms;
  bool open_ended = false;
  bool release_on_disconnect = false;
  Millis lock_delay_ms = 0;
  Principal principal = 0;
  bool admin = false;
  ConnId conn = 0;
};

enum class AcquireStatus { acquired, held, lock_delay, forbidden };

struct AcquireOutcome {
  AcquireStatus status = AcquireStatus::held;
  bool fresh = false;
  Millis retry_after_ms = 0;  // lock_delay only
};

AcquireOutcome acquire(KeyState& state, std::string_view key, const AcquireParams& params,
                       Millis now, const Limits& limits, Change& change);

struct HolderParams {
  SharedString owner;
  std::optional<Token> token;
  Principal principal = 0;
  bool admin = false;
};

enum class HolderStatus { ok, noop, not_holder, forbidden };

struct HolderOutcome {
  HolderStatus status = HolderStatus::not_holder;
  NotHolderReason reason = NotHolderReason::free;
  std::optional<Token> token;  // release: the ended tenure's token
};

HolderOutcome renew(KeyState& state, std::string_view key, const HolderParams& params,
                    std::optional<Millis> ttl_ms, Millis now, const Limits& limits, Change& change);

HolderOutcome release(KeyState& state, std::string_view key, const HolderParams& params, Millis now,
                      Change& change);

// Admin revoke: ends the live tenure whoever holds it, recording who did and why.
HolderOutcome revoke(KeyState& state, std::string_view key, const Revocation& revocation,
                     Millis now, Change& change);

// The fencing check: is `token` (of `owner`, if given) the live tenure right now?
HolderOutcome check(KeyState& state, std::string_view key, Token token,
                    std::optional<std::string_view> owner, Millis now, Change& change);

// The connection closed: end the lease if it was bound to that connection.
bool release_on_disconnect(KeyState& state, std::string_view key, ConnId conn, Millis now,
                           Change& change);

// The reason a request by `owner` is not the holder, given the state after lazy expiry.
NotHolderReason not_holder_reason(const KeyState& state, std::string_view owner,
                                  std::optional<Token> token);

}  // namespace tenure
