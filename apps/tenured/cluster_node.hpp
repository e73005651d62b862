#pragma once
// What makes tenured a node of a cluster (--cluster etcd, docs/cluster.md), around an engine that
// runs on the etcd ledger: the membership (etcd lease, slot claims), the peer listener other
// nodes forward to, and the router that forwards this node's requests. Started after the engine
// and stopped before it, in reverse order.
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "actors/engine.hpp"
#include "apps/tenured/options.hpp"
#include "storage/etcd_ledger.hpp"
#include "storage/membership.hpp"
#include "storage/slot_claims.hpp"
#include "transports/peer_session.hpp"
#include "transports/router.hpp"
#include "transports/server_context.hpp"

namespace tenure {

class ClusterNode {
 public:
  // The ledger for Engine::open, connected to etcd; null with `error` if not. `claims` outlives
  // it.
  static std::unique_ptr<storage::EtcdLedger> open_ledger(const Options& o,
                                                          storage::SlotClaims& claims,
                                                          std::string& error);

  // `ledger` is the engine's (it owns it); all outlive the node.
  ClusterNode(boost::asio::io_context& io, const Options& o, Engine& engine,
              storage::EtcdLedger& ledger, storage::SlotClaims& claims, ServerContext& context);
  ~ClusterNode();
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // Listens for peers, routes requests, joins the cluster. REQUIRES: the engine started.
  bool start(std::string& error);
  // Leaves the cluster (every slot let go, the lease revoked) and closes the peer links.
  // Idempotent; call it from outside the io threads, before the engine stops.
  void stop();

 private:
  Engine& engine_;
  storage::EtcdLedger& ledger_;
  ServerContext& context_;
  storage::Membership membership_;
  PeerServer peers_;
  Router router_;
  std::string peer_listen_;
  bool started_ = false;
};

}  // namespace tenure
