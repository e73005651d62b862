#pragma once
// The engine's in-process API: one request and one result type per operation (§3). Transports
// build requests from the wire and format results back onto it.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/errc.hpp"
#include "core/lease_machine.hpp"

namespace tenure {

// Who asks, on which connection, and when the request was read off the wire (§4).
struct Caller {
  Principal principal = 0;
  bool admin = false;
  ConnId conn = 0;
  Millis received_at = 0;
};

struct AcquireRequest {
  std::string key;
  AcquireParams params;  // owner, ttl, open_ended, release_on_disconnect, lock_delay
  Millis wait_ms = 0;
  Caller caller;
};

struct AcquireResult {
  std::optional<Error> error;
  AcquireStatus status = AcquireStatus::held;
  bool fresh = false;
  std::string key;
  std::optional<Lease> lease;  // acquired: the caller's lease; held: the holder's
  Token last_token = 0;        // lock_delay: the last tenure's token
  Millis retry_after_ms = 0;
  Revision revision = 0;
};

struct RenewRequest {
  std::string key;
  HolderParams holder;
  std::optional<Millis> ttl_ms;
  Caller caller;
};

struct ReleaseRequest {
  std::string key;
  HolderParams holder;
  Caller caller;
};

struct RevokeRequest {
  std::string key;
  std::string reason;
  std::string by;  // the revoking principal as the transport names it (§3 revoke)
  Caller caller;
};

struct CheckRequest {
  std::string key;
  Token token = 0;
  std::optional<SharedString> owner;
  Caller caller;
};

// The outcome of renew, release, revoke and check.
struct HolderResult {
  std::optional<Error> error;
  HolderStatus status = HolderStatus::not_holder;
  NotHolderReason reason = NotHolderReason::free;
  std::string key;
  // ok: the caller's lease (revoke: the lease it ended); not_holder: the live lease, if any
  std::optional<Lease> lease;
  std::optional<Token> token;  // release/revoke: the ended tenure
  Revision revision = 0;
};

struct GetRequest {
  std::string key;
  Caller caller;
};

// A queued acquire as `get` shows it: who waits, since when.
struct QueuedWaiter {
  SharedString owner;
  Millis since = 0;
};

struct GetResult {
  // `get` lists at most this many waiters, the first in the queue (§3 get).
  static constexpr std::size_t kMaxListedWaiters = 100;

  std::optional<Error> error;
  std::string key;
  std::optional<Lease> lease;
  Token last_token = 0;
  std::size_t waiters = 0;
  std::vector<QueuedWaiter> waiting;  // queue order
  Millis lock_delay_until = 0;        // 0: not in lock-delay
};

struct KeepaliveRequest {
  SharedString owner;
  std::optional<Millis> ttl_ms;
  Caller caller;
};

struct KeepaliveResult {
  std::optional<Error> error;
  std::size_t count = 0;
  Revision revision = 0;
};

struct ListRequest {
  std::string prefix;
  std::string after;
  std::size_t limit = 100;
  Caller caller;
};

struct ListedLease {
  std::string key;
  Lease lease;
};

struct ListResult {
  std::optional<Error> error;
  std::vector<ListedLease> leases;
  std::optional<std::string> next;
};

struct HistoryRequest {
  std::string key;
  std::size_t limit = 100;
  Token before_token = 0;  // 0: from the newest
  Caller caller;
};

struct HistoryResult {
  std::optional<Error> error;
  std::vector<TenureRecord> tenures;
  std::optional<Token> next;
};

// Admin only: an online, consistent copy of the ledger in `dir`, an absolute path that does not
// exist yet, on the server's machine (docs/operations.md, "Backups").
struct BackupRequest {
  std::string dir;
  Caller caller;
};

struct BackupResult {
  std::optional<Error> error;
  std::string dir;
  Revision revision = 0;  // every change up to it is in the backup
};

template <typename Result>
using Reply = std::function<void(Result)>;

}  // namespace tenure
