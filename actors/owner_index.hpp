#pragma once
// Which keys each owner holds, so that one keepalive renews them all. Approximate by design:
// every key found here is renewed through its actor, which checks the real holder. Entries point
// at actors, not copies of keys (a live lease keeps its actor resident, and the actor removes
// itself here before it can retire), which keeps the index at a pointer per lease.
#include <array>
#include <boost/unordered/unordered_flat_set.hpp>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tenure {

class KeyActor;

class OwnerIndex {
 public:
  void add(const std::string& owner, const KeyActor* actor);
  void remove(const std::string& owner, const KeyActor* actor);
  std::vector<std::string> keys_of(const std::string& owner) const;

 private:
  static constexpr std::size_t kShards = 16;
  struct Shard {
    mutable std::mutex mutex;
    // Open addressing: a slot per lease, no node; one owner may hold a million keys.
    std::unordered_map<std::string, boost::unordered_flat_set<const KeyActor*>> actors;
  };
  Shard& shard(const std::string& owner) const {
    return shards_[std::hash<std::string>{}(owner) % kShards];
  }
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace tenure
