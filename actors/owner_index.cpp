#include "actors/owner_index.hpp"

namespace tenure {

void OwnerIndex::add(std::string_view owner, KeyActor* actor) {
  Keys& keys = owners_[owner_hash(owner)];
  if (!keys.many) {
    if (keys.one == nullptr || keys.one == actor) {
      keys.one = actor;
      return;
    }
    keys.many = std::make_unique<boost::unordered_flat_set<KeyActor*>>();
    keys.many->insert(keys.one);
    keys.one = nullptr;
  }
  keys.many->insert(actor);
}

void OwnerIndex::remove(std::string_view owner, KeyActor* actor) {
  auto it = owners_.find(owner_hash(owner));
  if (it == owners_.end()) return;
  Keys& keys = it->second;
  if (!keys.many) {
    if (keys.one == actor) owners_.erase(it);
    return;
  }
  keys.many->erase(actor);
  if (keys.many->empty()) {
    owners_.erase(it);
  } else if (keys.many->size() * 8 < keys.many->bucket_count()) {
    keys.many->rehash(0);  // an owner that let most of its keys go gives their slots back
  }
}

void OwnerIndex::forget(const boost::unordered_flat_set<KeyActor*>& actors) {
  if (actors.empty()) return;
  std::vector<std::uint64_t> emptied;
  for (auto& [hash, keys] : owners_) {
    if (keys.many) {
      boost::unordered::erase_if(*keys.many,
                                 [&](KeyActor* actor) { return actors.contains(actor); });
      if (keys.many->empty()) emptied.push_back(hash);
    } else if (actors.contains(keys.one)) {
      emptied.push_back(hash);
    }
  }
  for (std::uint64_t hash : emptied) owners_.erase(hash);
}

std::vector<KeyActor*> OwnerIndex::keys_of(std::string_view owner) const {
  auto it = owners_.find(owner_hash(owner));
  if (it == owners_.end()) return {};
  const Keys& keys = it->second;
  if (!keys.many) return {keys.one};
  return {keys.many->begin(), keys.many->end()};
}

}  // namespace tenure
