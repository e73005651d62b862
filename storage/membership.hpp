#pragma once
// This node in a cluster (docs/cluster.md): its etcd lease, kept alive; its entry P/nodes/ID
// (with its peer address) under that lease; the writer claim P/writer and its slot claims
// P/slots/NNN, also under that lease. One node, the writer, owns every slot: every ledger write
// compares P/rev, so transactions from several nodes would only fail each other's compares. A
// thread of its own polls P/writer, P/nodes/ and P/slots/: a node claims P/writer when it is
// free (its holder stopped or its lease expired), the writer claims every free slot, and any
// other node hands the slots it holds back. A claim's create revision goes into SlotClaims
// (every ledger write compares it) before the engine recovers the slot (Handlers::adopt); a
// claim found gone, or the lease lost, lets the slot go (Handlers::drop) before anything else.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/cluster_view.hpp"
#include "core/slot.hpp"
#include "storage/errc.hpp"
#include "storage/etcd_client.hpp"
#include "storage/slot_claims.hpp"

namespace tenure::storage {

struct MembershipOptions {
  std::string prefix = "/tenure";  // P
  std::string node_id;
  std::string peer;  // HOST:PORT other nodes forward to
  std::chrono::milliseconds lease_ttl{5000};
  // How often P/nodes/ and P/slots/ are read: a dead node's slots are taken over within its
  // lease's TTL and this.
  std::chrono::milliseconds poll{200};
};

class Membership final : public ClusterView {
 public:
  struct Handlers {
    // Recovers the slot's rows in the engine (its claim is in SlotClaims already). False, with
    // `error`, gives the claim back.
    std::function<bool(std::uint32_t slot, std::string& error)> adopt;
    // Lets the slot go in the engine, writing nothing; blocks until it has.
    std::function<void(std::uint32_t slot)> drop;
  };

  // `etcd` and `claims` outlive the membership.
  Membership(EtcdClient& etcd, SlotClaims& claims, MembershipOptions options, Handlers handlers);
  ~Membership() override;
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Creates P/config and P/secret if absent (refuses a cluster of another slot count) and reads
  // the secret.
  Status open();
  // Grants the lease, registers the node and starts the thread that claims slots.
  // REQUIRES: open() succeeded.
  Status start();
  // Lets every slot go (Handlers::drop) and revokes the lease, so that other nodes take over at
  // once; joins the thread.
  void stop();

  // ClusterView: what the router asks, from any thread, without an etcd round trip (the view
  // is as of the last poll).
  const std::string& node_id() const override { return options_.node_id; }
  std::string owner(std::uint32_t slot) const override;
  std::vector<Node> nodes() const override;
  // REQUIRES: open() succeeded.
  std::string secret() const override { return secret_; }
  std::chrono::milliseconds claim_wait() const override {
    return options_.lease_ttl + std::chrono::seconds(1);
  }

  // The slots this node serves now, for stats.
  std::size_t slots_owned() const;

 private:
  struct SlotView {
    std::string node;                  // empty: free
    std::int64_t create_revision = 0;  // of the claim
    std::int64_t lease = 0;
  };

  // REQUIRES (all below): on the membership's thread.
  void run();
  Status ensure_cluster_keys();
  Status register_node();
  void keep_alive(std::chrono::steady_clock::time_point now);
  // etcd renewed the lease on a request sent at `sent`.
  void kept_alive(std::chrono::steady_clock::time_point sent);
  Status read_view(std::map<std::string, std::string>& nodes, std::vector<SlotView>& slots,
                   SlotView& writer) const;
  void reconcile(const std::map<std::string, std::string>& nodes,
                 const std::vector<SlotView>& slots, const SlotView& writer);
  // Claims P/writer; true if this node holds it now.
  bool claim_writer();
  // Claims the free slots in one transaction (one by one if another node holds one of them).
  void claim_all(const std::vector<std::uint32_t>& free);
  bool claim(std::uint32_t slot);
  void adopt(std::uint32_t slot, std::int64_t create_revision);
  void give_back(std::uint32_t slot);
  // Stops routing to the slot, forgets its claim and drops it from the engine.
  void lose(std::uint32_t slot, const char* why);
  void lose_everything(const char* why);
  std::string slot_key(std::uint32_t slot) const;
  std::string writer_key() const { return options_.prefix + "/writer"; }

  EtcdClient& etcd_;
  SlotClaims& claims_;
  const MembershipOptions options_;
  const Handlers handlers_;
  std::string secret_;

  std::int64_t lease_ = 0;                                  // 0: none (lost, or not granted yet)
  std::chrono::steady_clock::time_point last_keepalive_{};  // when the last one that worked left
  // Until when etcd surely still holds the lease (last_keepalive_ + TTL, in steady clock ticks):
  // past it, another node may own this node's slots, so owner() stops naming this node even
  // before the thread finds out (a paused node resumes with its memory stale).
  std::atomic<std::chrono::steady_clock::rep> lease_sure_until_{0};
  std::chrono::steady_clock::time_point next_keepalive_{};

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, std::string> nodes_;             // live node id -> peer address
  std::vector<SlotView> slots_{kSlots};                  // as last read
  std::vector<bool> local_ = std::vector<bool>(kSlots);  // claimed and adopted: routed here
  std::vector<std::pair<std::uint32_t, std::int64_t>> reported_lost_;  // by the ledger
  std::thread thread_;
};

// Checks what --node-id may be: 1 to 64 of [A-Za-z0-9._-] (it is part of etcd keys).
bool valid_node_id(std::string_view id);

}  // namespace tenure::storage
