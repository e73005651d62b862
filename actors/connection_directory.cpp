#include "actors/connection_directory.hpp"

#include "actors/engine.hpp"

namespace tenure {

ConnId ConnectionDirectory::add(std::weak_ptr<ConnectionListener> listener) {
  ConnId id = next_.fetch_add(1);
  Shard& s = shard(id);
  std::lock_guard lock(s.mutex);
  s.listeners.emplace(id, std::move(listener));
  size_.fetch_add(1);
  return id;
}

void ConnectionDirectory::remove(ConnId conn) {
  Shard& s = shard(conn);
  std::lock_guard lock(s.mutex);
  if (s.listeners.erase(conn)) size_.fetch_sub(1);
}

std::shared_ptr<ConnectionListener> ConnectionDirectory::find(ConnId conn) const {
  Shard& s = shard(conn);
  std::lock_guard lock(s.mutex);
  auto it = s.listeners.find(conn);
  return it == s.listeners.end() ? nullptr : it->second.lock();
}

std::size_t ConnectionDirectory::size() const { return size_.load(); }

}  // namespace tenure
