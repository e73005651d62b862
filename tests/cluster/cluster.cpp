#include "tests/cluster/cluster.hpp"

#include <signal.h>

#include <cstdio>
#include <stdexcept>
#include <thread>

#include "core/slot.hpp"

namespace cluster {

namespace {

std::string slot_key(const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "/tenure/slots/%03u", tenure::slot_of(key));
  return name;
}

}  // namespace

std::string outcome(const e2e::Json& reply) {
  std::string status = reply["status"].str();
  return status == "error" ? "error:" + reply["error"].str() : status;
}

Cluster::Cluster(ClusterOptions options)
    : options_(std::move(options)),
      etcd_(options_.etcd_members),
      kv_(tenure::storage::EtcdOptions{.endpoints = etcd_.endpoint_list()}) {
  for (int i = 0; i < options_.nodes; ++i) {
    std::vector<std::string> args{
        "--cluster",           "etcd",
        "--etcd-endpoints",    etcd_.endpoints(),
        "--node-id",           node_id(i),
        "--peer-listen",       "127.0.0.1:" + std::to_string(peer_ports_.emplace_back().port()),
        "--cluster-lease-ttl", std::to_string(options_.lease_ttl.count()) + "ms",
        "--log-level",         "info"};
    args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
    nodes_.push_back(std::make_unique<e2e::Daemon>(std::move(args), false));
    stopped_.push_back(false);
  }
  for (auto& node : nodes_) node->spawn();
  for (auto& node : nodes_) node->wait_ready();
  wait_settled();
}

Cluster::~Cluster() {
  for (int i = 0; i < size(); ++i) {
    if (stopped_[i]) cont(i);
  }
  // Nodes go before etcd (members_ destruct after nodes_ would be too late for a clean log).
  nodes_.clear();
}

std::vector<std::string> Cluster::sockets_from(int first) const {
  std::vector<std::string> out;
  for (int k = 0; k < size(); ++k) out.push_back(socket((first + k) % size()));
  return out;
}

std::vector<std::vector<std::string>> Cluster::spread(int workers) const {
  std::vector<std::vector<std::string>> out;
  for (int w = 0; w < workers; ++w) out.push_back(sockets_from(w % size()));
  return out;
}

void Cluster::wait_settled(Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last, previous;
  for (;;) {
    std::uint64_t owned = 0;
    last.clear();
    for (int i = 0; i < size(); ++i) {
      if (!running(i)) continue;
      try {
        auto c = connect(i);
        auto stats = c.call("\"op\":\"stats\"", 2000ms);
        owned += stats["cluster"]["slots_owned"].u64();
        last += node_id(i) + ": " + stats["cluster"].dump() + "\n";
      } catch (const std::exception& e) {
        last += node_id(i) + ": " + e.what() + "\n";
      }
    }
    // Every slot owned, and the same owners twice in a row (no hand-over under way).
    if (owned == tenure::kSlots && last == previous) return;
    previous = owned == tenure::kSlots ? last : "";
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error("the cluster did not settle (every slot owned once) within " +
                               std::to_string(timeout.count()) + " ms:\n" + last);
    }
    std::this_thread::sleep_for(200ms);
  }
}

std::optional<int> Cluster::writer() { return claimant("/tenure/writer"); }

std::optional<int> Cluster::owner_of(const std::string& key) { return claimant(slot_key(key)); }

std::optional<int> Cluster::claimant(const std::string& claim_key) {
  tenure::storage::KeyValue claim;
  auto status = kv_.get(claim_key, claim);
  if (!status.ok()) throw std::runtime_error("etcd: " + status.message());
  if (claim.create_revision == 0) return std::nullopt;
  for (int i = 0; i < size(); ++i) {
    if (claim.value == node_id(i)) return i;
  }
  throw std::runtime_error(claim_key + " is held by an unknown node " + claim.value);
}

int Cluster::wait_owner(const std::string& key, std::optional<int> not_node, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto owner = owner_of(key);
    if (owner && owner != not_node && running(*owner)) return *owner;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error("no running node took over the slot of " + key + " within " +
                               std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(20ms);
  }
}

std::string Cluster::key_owned_by(int i, const std::string& prefix) {
  for (int n = 0; n < 10000; ++n) {
    std::string key = prefix + std::to_string(n);
    if (owner_of(key) == i) return key;
  }
  throw std::runtime_error(node_id(i) + " owns no slot");
}

std::string Cluster::key_not_owned_by(int i, const std::string& prefix) {
  for (int n = 0; n < 10000; ++n) {
    std::string key = prefix + std::to_string(n);
    auto owner = owner_of(key);
    if (owner && owner != i) return key;
  }
  throw std::runtime_error(node_id(i) + " owns every slot");
}

void Cluster::stop(int i) {
  ::kill(nodes_.at(i)->pid(), SIGSTOP);
  stopped_.at(i) = true;
}

void Cluster::cont(int i) {
  ::kill(nodes_.at(i)->pid(), SIGCONT);
  stopped_.at(i) = false;
}

void Cluster::restart(int i) {
  if (stopped_.at(i)) cont(i);
  nodes_.at(i)->restart_after_crash();
}

}  // namespace cluster
