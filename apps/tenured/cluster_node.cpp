#include "apps/tenured/cluster_node.hpp"

#include <spdlog/spdlog.h>

namespace tenure {
namespace {

storage::MembershipOptions membership_options(const Options& o) {
  storage::MembershipOptions m;
  m.prefix = o.cluster_prefix;
  m.node_id = o.node_id;
  m.peer = o.peer_listen;
  m.lease_ttl = std::chrono::milliseconds(o.cluster_lease_ttl);
  return m;
}

}  // namespace

std::unique_ptr<storage::EtcdLedger> ClusterNode::open_ledger(const Options& o,
                                                              storage::SlotClaims& claims,
                                                              std::string& error) {
  storage::EtcdLedgerOptions options;
  options.etcd.endpoints = o.etcd_endpoints;
  options.prefix = o.cluster_prefix;
  options.history_keep = o.history_keep;
  options.events_keep = o.events_keep;
  storage::Status status;
  auto ledger = storage::EtcdLedger::open(options, claims, status);
  if (!ledger) error = "cannot open the cluster's ledger on etcd: " + status.message();
  return ledger;
}

ClusterNode::ClusterNode(boost::asio::io_context& io, const Options& o, Engine& engine,
                         storage::EtcdLedger& ledger, storage::SlotClaims& claims,
                         ServerContext& context)
    : engine_(engine),
      ledger_(ledger),
      context_(context),
      membership_(ledger.client(), claims, membership_options(o),
                  {[this](std::uint32_t slot, std::string& error) {
                     Engine::SlotRows rows;
                     storage::Status status =
                         ledger_.scan_slot(slot, [&](std::string key, storage::LoadedState row) {
                           rows.emplace_back(std::move(key), std::move(row));
                         });
                     if (!status.ok()) {
                       error = status.message();
                       return false;
                     }
                     return engine_.adopt_slot(slot, std::move(rows), error);
                   },
                   [this](std::uint32_t slot) { engine_.drop_slot(slot); }}),
      peers_(io, context, membership_),
      router_(io, context, membership_),
      peer_listen_(o.peer_listen) {}

ClusterNode::~ClusterNode() { stop(); }

bool ClusterNode::start(std::string& error) {
  if (storage::Status status = membership_.open(); !status.ok()) {
    error = "cannot join the cluster: " + status.message();
    return false;
  }
  // Peers may forward as soon as this node claims a slot: listen first.
  if (!peers_.listen(peer_listen_, error)) return false;
  peers_.start();
  context_.router = &router_;
  context_.cluster = &membership_;
  started_ = true;
  if (storage::Status status = membership_.start(); !status.ok()) {
    error = "cannot join the cluster: " + status.message();
    return false;
  }
  spdlog::info("cluster node {} on etcd; peers connect to {}", membership_.node_id(), peer_listen_);
  return true;
}

void ClusterNode::stop() {
  if (!started_) return;
  started_ = false;
  membership_.stop();  // the slots go to the other nodes now, not at the lease's TTL
  router_.stop();
  peers_.stop();
}

}  // namespace tenure
