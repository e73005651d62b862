#pragma once
// The records of the tenure ledger: leases, per-key state, tenures and events (§1, §5).
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/shared_string.hpp"

namespace tenure {

using Token = std::uint64_t;
using Revision = std::uint64_t;
using Principal = std::uint32_t;  // the peer's uid
using ConnId = std::uint64_t;     // 0: no connection

// `recovered` is the ledger's, not a key's: a recovery or restore raised the revision and every
// key's next token (§6); its key is empty.
enum class EventType : std::uint8_t { acquired, renewed, released, expired, revoked, recovered };
enum class EndReason : std::uint8_t { released, expired, revoked };

std::string_view to_string(EventType type);
std::string_view to_string(EndReason reason);

// Fields ordered widest first: a resident actor holds one per live lease (no padding holes).
struct Lease {
  SharedString owner;
  Token token = 0;
  Millis acquired_at = 0;
  std::optional<Millis> expires_at;  // empty: open-ended
  Millis ttl_ms = 0;                 // 0 when open-ended
  ConnId conn = 0;                   // the connection told of loss; not persisted
  Millis lock_delay_ms = 0;
  Principal principal = 0;
  bool release_on_disconnect = false;

  bool open_ended() const { return !expires_at; }
  bool live_at(Millis now) const { return !expires_at || now < *expires_at; }
};

// Everything the ledger keeps for one key. Survives the lease: last_token never goes back.
struct KeyState {
  std::optional<Lease> lease;
  Token last_token = 0;
  Millis lock_until = 0;  // lock-delay after an involuntary loss
  // The most recent ended tenure, so that renew can say "expired" rather than "free".
  SharedString last_owner;
  EndReason last_end = EndReason::released;

  bool idle() const { return !lease && lock_until == 0; }
};

// Who revoked a tenure and why (§3 revoke), kept in its record and carried by its event. Both
// empty unless the tenure was revoked (and `reason` also when none was given).
struct Revocation {
  std::string by;  // the revoking principal: "uid:N" or "ws"
  std::string reason;

  bool empty() const { return by.empty() && reason.empty(); }
};

struct TenureRecord {
  Token token = 0;
  SharedString owner;
  Millis acquired_at = 0;
  std::optional<Millis> ended_at;
  std::optional<EndReason> end;
  Revocation revocation;
};

struct Event {
  EventType type = EventType::acquired;
  std::string key;
  SharedString owner;
  Token token = 0;
  Millis at = 0;
  std::optional<Millis> expires_at;
  Revision revision = 0;  // assigned by the ledger at commit
  Revocation revocation;  // revoked only
};

// A tenure of `key`, by its token.
struct BoundTenure {
  std::string key;
  Token token = 0;
};

// A change's events and tenure records: a turn makes one or two of each (two when a lease ends
// and its first waiter takes the key), kept inline so that a turn allocates no vector for them.
using Events = boost::container::small_vector<Event, 2>;
using TenureRecords = boost::container::small_vector<TenureRecord, 2>;

}  // namespace tenure
