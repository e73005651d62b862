#include "actors/owner_index.hpp"

namespace tenure {

void OwnerIndex::add(const std::string& owner, const std::string& key) {
  Shard& s = shard(owner);
  std::lock_guard lock(s.mutex);
  s.keys[owner].insert(key);
}

void OwnerIndex::remove(const std::string& owner, const std::string& key) {
  Shard& s = shard(owner);
  std::lock_guard lock(s.mutex);
  auto it = s.keys.find(owner);
  if (it == s.keys.end()) return;
  it->second.erase(key);
  if (it->second.empty()) s.keys.erase(it);
}

std::vector<std::string> OwnerIndex::keys_of(const std::string& owner) const {
  Shard& s = shard(owner);
  std::lock_guard lock(s.mutex);
  auto it = s.keys.find(owner);
  if (it == s.keys.end()) return {};
  return {it->second.begin(), it->second.end()};
}

}  // namespace tenure
