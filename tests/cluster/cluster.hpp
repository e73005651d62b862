#pragma once
// A real cluster for the cluster tests: a 3-member etcd (tests/support/etcd_process.hpp) and
// three tenured nodes on loopback, each a tests/e2e Daemon in its own temp dir started with
// `--cluster etcd --etcd-endpoints … --node-id nK --peer-listen 127.0.0.1:PORT` and a short
// --cluster-lease-ttl, so that failovers fit in the test's time.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/etcd_client.hpp"
#include "tests/e2e/daemon.hpp"
#include "tests/e2e/line_client.hpp"
#include "tests/support/etcd_process.hpp"
#include "tests/support/free_port.hpp"

// The tag of the cases that run a cluster: "[cluster]", or "[.cluster]" (hidden) while the
// daemon lacks --cluster (tests/cluster/CMakeLists.txt decides).
#ifndef CLUSTER_TAG
#error "CLUSTER_TAG must be defined by the build"
#endif

namespace cluster {

using namespace std::chrono_literals;
using e2e::Millis;

struct ClusterOptions {
  int nodes = 3;
  int etcd_members = 3;
  Millis lease_ttl{2000};  // --cluster-lease-ttl
  std::vector<std::string> extra_args{};
};

class Cluster {
 public:
  explicit Cluster(ClusterOptions options = {});
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int size() const { return static_cast<int>(nodes_.size()); }
  Millis lease_ttl() const { return options_.lease_ttl; }
  // The contract's bound on a failover: --cluster-lease-ttl + 1 s.
  Millis failover_bound() const { return options_.lease_ttl + 1000ms; }
  tenure::test::EtcdCluster& etcd() { return etcd_; }
  e2e::Daemon& node(int i) { return *nodes_.at(i); }
  std::string node_id(int i) const { return "n" + std::to_string(i + 1); }
  std::string socket(int i) const { return nodes_.at(i)->socket_path(); }
  // Every node's socket, starting with node `first` (the order a failing-over client tries).
  std::vector<std::string> sockets_from(int first) const;
  // For n load workers: worker w starts on node w % size() and fails over in order from there.
  std::vector<std::vector<std::string>> spread(int workers) const;
  e2e::LineClient connect(int i) const { return nodes_.at(i)->connect(); }
  bool running(int i) const { return nodes_.at(i)->running() && !stopped_.at(i); }

  // Waits until the running nodes own all 64 slots between them (by their stats): the writer
  // owns them all.
  void wait_settled(Millis timeout = 30000ms);
  // The node that holds the writer claim now (from etcd's P/writer), or empty while nobody does.
  std::optional<int> writer();
  // The node that owns `key`'s slot now (from etcd's P/slots/NNN), or empty while nobody does.
  std::optional<int> owner_of(const std::string& key);
  // Waits until key's slot is owned by a running node other than `not_node`; returns it.
  int wait_owner(const std::string& key, std::optional<int> not_node, Millis timeout);
  // A key with prefix whose slot node i owns now (tries prefix0, prefix1, …).
  std::string key_owned_by(int i, const std::string& prefix);
  // A key with prefix whose slot node i does NOT own (its requests are forwarded).
  std::string key_not_owned_by(int i, const std::string& prefix);

  void kill9(int i) { nodes_.at(i)->kill9(); }
  void stop(int i);  // SIGSTOP
  void cont(int i);  // SIGCONT
  void restart(int i);

 private:
  // The node named by a claim (P/writer, P/slots/NNN) in etcd, or empty while there is none.
  std::optional<int> claimant(const std::string& claim_key);

  ClusterOptions options_;
  tenure::test::EtcdCluster etcd_;
  tenure::storage::EtcdClient kv_;                      // reads the slot claims
  std::vector<tenure::test::ReservedPort> peer_ports_;  // held while the nodes live
  std::vector<std::unique_ptr<e2e::Daemon>> nodes_;
  std::vector<bool> stopped_;
};

// How long since `start`, in ms (for printing failover times).
inline long long ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start).count();
}

// A request body's reply status, or "error:CODE".
std::string outcome(const e2e::Json& reply);

}  // namespace cluster
