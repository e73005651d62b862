#include "actors/owner_index.hpp"

#include "actors/key_actor.hpp"

namespace tenure {

void OwnerIndex::add(const std::string& owner, const KeyActor* actor) {
  std::uint64_t hash = owner_hash(owner);
  Shard& s = shard(hash);
  std::lock_guard lock(s.mutex);
  Keys& keys = s.owners[hash];
  if (!keys.many) {
    if (keys.one == nullptr || keys.one == actor) {
      keys.one = actor;
      return;
    }
    keys.many = std::make_unique<boost::unordered_flat_set<const KeyActor*>>();
    keys.many->insert(keys.one);
    keys.one = nullptr;
  }
  keys.many->insert(actor);
}

void OwnerIndex::remove(const std::string& owner, const KeyActor* actor) {
  std::uint64_t hash = owner_hash(owner);
  Shard& s = shard(hash);
  std::lock_guard lock(s.mutex);
  auto it = s.owners.find(hash);
  if (it == s.owners.end()) return;
  Keys& keys = it->second;
  if (!keys.many) {
    if (keys.one == actor) s.owners.erase(it);
    return;
  }
  keys.many->erase(actor);
  if (keys.many->empty()) {
    s.owners.erase(it);
  } else if (keys.many->size() * 8 < keys.many->bucket_count()) {
    keys.many->rehash(0);  // an owner that let most of its keys go gives their slots back
  }
}

std::vector<std::string> OwnerIndex::keys_of(const std::string& owner) const {
  std::uint64_t hash = owner_hash(owner);
  Shard& s = shard(hash);
  std::lock_guard lock(s.mutex);
  auto it = s.owners.find(hash);
  if (it == s.owners.end()) return {};
  const Keys& keys = it->second;
  if (!keys.many) return {std::string(keys.one->key())};
  std::vector<std::string> out;
  out.reserve(keys.many->size());
  for (const KeyActor* actor : *keys.many) out.emplace_back(actor->key());
  return out;
}

}  // namespace tenure
