#pragma once
// The tenure ledger of a cluster, on etcd (docs/cluster.md). Keys, under the prefix P:
//   P/rev                               the last revision assigned, cluster-wide (decimal)
//   P/slots/NNN                         the claim of slot NNN (made by the membership)
//   P/leases/NNN/KEY                    KeyState (encode_state), as RocksDB's leases row
//   P/tenures/NNN/KEY '\0' BE64(token)  TenureRecord of an ended tenure
//   P/events/<16 hex digits revision>   the Events of one transaction, from that revision on
// One writer thread commits the submitted groups in one etcd transaction (split only at etcd's
// limits) that also compares P/rev's mod revision (revisions are +1 per event cluster-wide) and
// the create revision of our claim on every slot it touches (a node that lost a claim can never
// commit to that slot again). Groups are answered only once the transaction committed. The
// event sink is fed by one watch on P/events/, so it sees every node's events in revision order;
// revision() is the newest event it was given.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "storage/etcd_client.hpp"
#include "storage/known_rows.hpp"
#include "storage/ledger_store.hpp"
#include "storage/slot_claims.hpp"

namespace tenure::storage {

struct EtcdLedgerOptions {
  EtcdOptions etcd;
  std::string prefix = "/tenure";  // --cluster-prefix
  std::size_t history_keep = 1000;
  Millis history_max_age = 30LL * 86'400'000;
  std::uint64_t events_keep = 1'000'000;
  // A transaction stays under etcd's --max-txn-ops and --max-request-bytes (cluster mode runs
  // etcd with 10000 and 8 MiB; base64 and JSON make a request about 1.4 times its bytes). Past
  // about a thousand ops a bigger transaction only waits longer: etcd applies it in one go.
  std::size_t max_txn_ops = 2048;
  std::size_t max_txn_bytes = 5u << 20;
};

class EtcdLedger final : public LedgerStore {
 public:
  // Connects, reads P/rev and starts the writer and the watch. `claims` says which slots this
  // node may write; it must outlive the ledger. On failure returns null and says why.
  static std::unique_ptr<EtcdLedger> open(const EtcdLedgerOptions& options, SlotClaims& claims,
                                          Status& status);
  ~EtcdLedger() override;
  EtcdLedger(const EtcdLedger&) = delete;
  EtcdLedger& operator=(const EtcdLedger&) = delete;

  Status load(std::string_view key, LoadedState& loaded) const override;
  // The rows that need recovery (see needs_recovery) of every slot this node owns.
  Status scan_leases(const std::function<void(std::string key, LoadedState)>& visit) const override;
  // The same for one slot, to take it over.
  Status scan_slot(std::uint32_t slot,
                   const std::function<void(std::string key, LoadedState)>& visit) const;
  Status list(std::string_view prefix, std::string_view after, std::size_t limit, Millis now,
              std::vector<LeaseRow>& rows, bool& more) const override;
  Status history(std::string_view key, Token before_token, std::size_t limit,
                 std::vector<TenureRecord>& records, bool& more) const override;
  Status events_from(Revision from, std::size_t limit, std::vector<Event>& events) const override;
  // Drops ended tenures older than the age limit, in the slots this node owns.
  Status compact_history(Millis now, std::size_t& dropped) override;
  // Refused: etcd's own snapshot is the cluster's backup.
  Status backup(const std::string& dir) const override;

  void submit(std::vector<WriteOp> ops, CommitDone done) override;
  void refusal_settled() override { unsettled_.fetch_sub(1); }
  void set_event_sink(EventSink sink) override;
  void flush() override;
  void stop() override;

  bool healthy() const override { return healthy_.load(); }
  Revision revision() const override { return announced_.load(); }
  Revision oldest_revision() const override { return oldest_.load(); }
  Token token_floor() const override { return 0; }  // etcd loses nothing it acknowledged
  const std::string& recovery_note() const override { return recovery_note_; }
  WriterStats stats() const override;
  std::string last_error() const override;

  EtcdClient& client() { return *client_; }
  // The etcd keys of a row, for tools and tests.
  std::string lease_key(std::string_view key) const;
  std::string slot_key(std::uint32_t slot) const;
  std::string rev_key() const { return prefix_ + "/rev"; }
  std::string event_key(Revision revision) const;

 private:
  struct Pending {
    std::vector<WriteOp> ops;
    CommitDone done;
    // The slots its ops touch, with our claim's create revision when it was submitted: the
    // state it was computed on is valid only under that claim.
    std::vector<std::pair<std::uint32_t, std::int64_t>> claims;
    std::size_t entries = 0;  // etcd ops it needs
    std::size_t bytes = 0;    // about
  };
  EtcdLedger(const EtcdLedgerOptions& options, SlotClaims& claims);
  Status start();
  void run();                                // the writer thread
  void watch_loop();                         // the watch thread
  void commit(std::vector<Pending>& batch);  // REQUIRES: writer thread
  void refuse(std::vector<Pending>& batch);
  void answer(std::vector<Pending>& batch, bool ok);
  Status resync();  // REQUIRES: writer thread
  Status fence();   // REQUIRES: writer thread
  // Delivers the events of [from, ...] that a range read finds; the etcd revision it read at.
  Status catch_up(std::int64_t& etcd_revision);  // REQUIRES: watch thread
  // events_from, and the etcd revision it read at.
  Status read_events(Revision from, std::size_t limit, std::vector<Event>& out,
                     std::int64_t& etcd_revision) const;
  // The first revision of the transaction whose events are under `key` (P/events/REV).
  std::optional<Revision> event_revision(std::string_view key) const;
  // Hands the sink the events that follow the last delivered one without a gap (all of them
  // with `trimmed_gap_ok`, which catch-up passes: what it cannot read was trimmed); false when
  // some were held back behind a gap. REQUIRES: watch thread
  bool deliver(std::vector<Event>& events, bool trimmed_gap_ok = false);
  void fail(const Status& status);
  std::string slot_dir(std::uint32_t slot) const;
  std::string tenure_key(std::string_view key, Token token) const;
  Status scan_range(const std::string& begin, const std::string& end,
                    const std::function<void(KeyValue&)>& visit) const;

  EtcdLedgerOptions options_;
  SlotClaims& claims_;
  // Scans fill it and loads consult it (both const: it caches what etcd holds).
  mutable KnownRows known_rows_;
  std::string prefix_;
  std::unique_ptr<EtcdClient> client_;        // writes and reads: every thread
  std::unique_ptr<EtcdClient> watch_client_;  // the watch thread's stream
  std::string recovery_note_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::condition_variable delivered_cv_;
  std::vector<Pending> queue_;
  std::uint64_t submitted_ = 0;
  std::uint64_t finished_ = 0;
  bool stopping_ = false;
  bool writer_done_ = false;
  EventSink sink_;
  WriterStats stats_;
  std::string last_error_;
  // Set by the writer when the watch does not deliver what it committed in time: the watch
  // thread reopens its stream.
  bool watch_stalled_ = false;
  bool watch_stopping_ = false;  // after the writer drained

  // Writer thread only.
  Revision last_ = 0;         // P/rev's value as last seen
  std::int64_t rev_mod_ = 0;  // and its mod revision (0: absent)
  std::size_t max_txn_ops_;   // lowered when etcd refuses a transaction as too large
  std::size_t max_txn_bytes_;
  std::size_t last_batch_ops_ = 0;  // in the last transaction taken

  std::int64_t etcd_revision_read_ = 0;   // when resync() read P/rev
  std::int64_t start_etcd_revision_ = 0;  // the watch starts after it (set before it starts)
  std::atomic<std::int64_t> unsettled_{0};
  std::atomic<bool> healthy_{true};
  // A transaction's outcome is unknown (sent, never answered): it may still commit, late, on top
  // of what is read meanwhile. Until resync() has fenced it off, load() reads nothing.
  std::atomic<bool> unfenced_{false};
  // revision(): ahead of the sink, never behind it. A watch subscribes first and reads revision()
  // next, so an event it was not subscribed for must already be counted in what it read.
  std::atomic<Revision> announced_{0};
  std::atomic<Revision> delivered_{0};  // the last revision the sink returned from
  std::atomic<Revision> oldest_{0};
  std::thread writer_;
  std::thread watcher_;
};

}  // namespace tenure::storage
