#pragma once
// Which keys each owner holds, so that one keepalive renews them all. Approximate by design:
// every key found here is renewed through its actor, which checks the real holder. Entries point
// at actors, not copies of keys (a live lease keeps its actor resident, and the actor removes
// itself here before it can retire), and owners are known by a 64-bit hash of their name, not a
// copy of it: most owners hold one key, and a name costs more than the entry. A hash collision
// only makes keepalive ask an actor that then finds another holder (and does not count it).
#include <array>
#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
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
  // One key inline; a set (open addressing, one owner may hold a million keys) from the second.
  struct Keys {
    const KeyActor* one = nullptr;
    std::unique_ptr<boost::unordered_flat_set<const KeyActor*>> many;
  };
  struct Shard {
    mutable std::mutex mutex;
    boost::unordered_flat_map<std::uint64_t, Keys> owners;
  };
  static std::uint64_t owner_hash(const std::string& owner) {
    return std::hash<std::string>{}(owner);
  }
  Shard& shard(std::uint64_t hash) const { return shards_[hash % kShards]; }
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace tenure
