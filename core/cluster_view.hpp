#pragma once
// What a node needs to know of its cluster to route requests (docs/cluster.md): who owns each
// slot, and how to reach and authenticate to the other nodes. The membership implements it over
// etcd; tests use an in-process fake. Every method may be called from any thread, and owner() is
// asked once per request naming a key, so it must be cheap (no etcd round trip).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tenure {

class ClusterView {
 public:
  struct Node {
    std::string id;
    std::string peer;  // HOST:PORT of its --peer-listen
  };

  virtual ~ClusterView() = default;

  virtual const std::string& node_id() const = 0;
  // The node that serves `slot`: node_id() once this node has adopted it (its rows are loaded and
  // requests may go to the local engine), another node's id while that one holds the claim, or
  // empty while nobody does (a failover in progress: the router asks again until claim_wait()).
  virtual std::string owner(std::uint32_t slot) const = 0;
  // The live nodes, this one included.
  virtual std::vector<Node> nodes() const = 0;
  // What peers present in their hello (P/secret).
  virtual std::string secret() const = 0;
  // How long a request for a slot nobody owns waits for a claim before `unavailable`:
  // --cluster-lease-ttl + 1 s.
  virtual std::chrono::milliseconds claim_wait() const = 0;
};

}  // namespace tenure
