#pragma once
// Which keys of one shard each owner holds, so that one keepalive renews them all. Approximate by
// design: every key found here is renewed through its actor, which checks the real holder.
// Entries point at actors, not copies of keys (a live lease keeps its actor resident, and the
// actor removes itself here before it can retire), and owners are known by a 64-bit hash of their
// name, not a copy of it: most owners hold one key, and a name costs more than the entry. A hash
// collision only makes keepalive ask an actor that then finds another holder (and does not count
// it). Owned by a shard: REQUIRES (every method) on the shard's strand.
#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace tenure {

class KeyActor;

class OwnerIndex {
 public:
  void add(std::string_view owner, KeyActor* actor);
  void remove(std::string_view owner, KeyActor* actor);
  std::vector<KeyActor*> keys_of(std::string_view owner) const;
  // Removes these actors under whichever owner they are filed (their memory may be ahead of
  // the index, with writes in flight): one walk over every owner.
  void forget(const boost::unordered_flat_set<KeyActor*>& actors);

 private:
  // One key inline; a set (open addressing, one owner may hold a million keys) from the second.
  struct Keys {
    KeyActor* one = nullptr;
    std::unique_ptr<boost::unordered_flat_set<KeyActor*>> many;
  };
  static std::uint64_t owner_hash(std::string_view owner) {
    return std::hash<std::string_view>{}(owner);
  }

  boost::unordered_flat_map<std::uint64_t, Keys> owners_;
};

}  // namespace tenure
