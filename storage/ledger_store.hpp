#pragma once
// What the engine needs of a tenure ledger, whoever keeps it: RocksDB on this machine (Ledger)
// or etcd for a cluster (EtcdLedger). The engine sees only this; each method keeps the meaning
// documented on Ledger and GroupWriter, which implement it for a single node.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lease.hpp"
#include "storage/errc.hpp"
#include "storage/group_writer.hpp"

namespace tenure::storage {

struct LoadedState {
  KeyState state;
  bool corrupt = false;  // the row could not be decoded and was replaced by a safe one
};

// A stored row, or, if it cannot be decoded, a free key with a last_token no tenure can have had
// (every tenure start is an event, so no token exceeds the revision).
LoadedState decode_or_quarantine(std::string_view bytes, Revision revision);
// Whether recovery must see the row: it holds a lease, a lock-delay, or could not be read.
inline bool needs_recovery(const LoadedState& loaded) {
  return loaded.state.lease || loaded.corrupt || loaded.state.lock_until != 0;
}

struct LeaseRow {
  std::string key;
  Lease lease;
};

class LedgerStore {
 public:
  virtual ~LedgerStore() = default;

  // Reads: only committed, hence durable, rows; a read that fails is an error, never fewer rows.
  virtual Status load(std::string_view key, LoadedState& loaded) const = 0;
  virtual Status scan_leases(
      const std::function<void(std::string key, LoadedState)>& visit) const = 0;
  virtual Status list(std::string_view prefix, std::string_view after, std::size_t limit,
                      Millis now, std::vector<LeaseRow>& rows, bool& more) const = 0;
  virtual Status history(std::string_view key, Token before_token, std::size_t limit,
                         std::vector<TenureRecord>& records, bool& more) const = 0;
  virtual Status events_from(Revision from, std::size_t limit,
                             std::vector<Event>& events) const = 0;
  virtual Status compact_history(Millis now, std::size_t& dropped) = 0;
  virtual Status backup(const std::string& dir) const = 0;

  // Writes: one shard turn's changes at a time, each answered once and in submit order, refusals
  // too: a key actor takes an answer as settling every group it submitted before it
  // (KeyActor::flush_ready), so one that overtook an older group would acknowledge that group's
  // replies before its write was done.
  virtual void submit(std::vector<WriteOp> ops, CommitDone done) = 0;
  virtual void refusal_settled() = 0;
  virtual void set_event_sink(EventSink sink) = 0;
  virtual void flush() = 0;
  virtual void stop() = 0;

  virtual bool healthy() const = 0;
  virtual Revision revision() const = 0;
  virtual Revision oldest_revision() const = 0;
  virtual Token token_floor() const = 0;
  virtual const std::string& recovery_note() const = 0;
  virtual WriterStats stats() const = 0;
  virtual std::string last_error() const = 0;
};

}  // namespace tenure::storage
