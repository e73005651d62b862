#include "transports/connection_keys.hpp"

namespace tenure {

void ConnectionKeys::acquire_sent(const std::string& key) { ++keys_[key].pending; }

void ConnectionKeys::acquire_answered(const std::string& key, bool acquired) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  --it->second.pending;
  it->second.bound = acquired;
  forget_if_unused(it);
}

void ConnectionKeys::lease_ended(const std::string& key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  it->second.bound = false;
  forget_if_unused(it);
}

void ConnectionKeys::forget_if_unused(Map::iterator it) {
  if (it->second.pending == 0 && !it->second.bound) keys_.erase(it);
}

std::vector<std::string> ConnectionKeys::take() {
  std::vector<std::string> keys;
  keys.reserve(keys_.size());
  for (auto& entry : keys_) keys.push_back(entry.first);
  keys_.clear();
  return keys;
}

}  // namespace tenure
