#include "actors/owner_index.hpp"

#include "actors/key_actor.hpp"

namespace tenure {

void OwnerIndex::add(const std::string& owner, const KeyActor* actor) {
  Shard& s = shard(owner);
  std::lock_guard lock(s.mutex);
  s.actors[owner].insert(actor);
}

void OwnerIndex::remove(const std::string& owner, const KeyActor* actor) {
  Shard& s = shard(owner);
  std::lock_guard lock(s.mutex);
  auto it = s.actors.find(owner);
  if (it == s.actors.end()) return;
  it->second.erase(actor);
  if (it->second.empty()) {
    s.actors.erase(it);
  } else if (it->second.size() * 8 < it->second.bucket_count()) {
    it->second.rehash(0);  // an owner that let most of its keys go gives their slots back
  }
}

std::vector<std::string> OwnerIndex::keys_of(const std::string& owner) const {
  Shard& s = shard(owner);
  std::lock_guard lock(s.mutex);
  auto it = s.actors.find(owner);
  if (it == s.actors.end()) return {};
  std::vector<std::string> keys;
  keys.reserve(it->second.size());
  for (const KeyActor* actor : it->second) keys.emplace_back(actor->key());
  return keys;
}

}  // namespace tenure
