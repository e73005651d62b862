#pragma once
// Open connections by id, so that an actor can tell one that its lease was lost.
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/lease.hpp"

namespace tenure {

class ConnectionListener;

class ConnectionDirectory {
 public:
  ConnId add(std::weak_ptr<ConnectionListener> listener);
  void remove(ConnId conn);
  std::shared_ptr<ConnectionListener> find(ConnId conn) const;
  std::size_t size() const;

 private:
  static constexpr std::size_t kShards = 16;
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<ConnId, std::weak_ptr<ConnectionListener>> listeners;
  };
  Shard& shard(ConnId conn) const { return shards_[conn % kShards]; }

  mutable std::array<Shard, kShards> shards_;
  std::atomic<ConnId> next_{1};
  std::atomic<std::size_t> size_{0};
};

}  // namespace tenure
