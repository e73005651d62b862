#include "transports/session_registry.hpp"

#include "transports/session.hpp"

namespace tenure {

void SessionRegistry::add(const std::shared_ptr<Session>& session) {
  std::lock_guard lock(mutex_);
  sessions_.emplace(session.get(), session);
}

void SessionRegistry::remove(const Session* session) {
  std::lock_guard lock(mutex_);
  if (sessions_.erase(session) > 0 && sessions_.empty()) emptied_.notify_all();
}

std::size_t SessionRegistry::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::vector<std::shared_ptr<Session>> SessionRegistry::open_sessions() const {
  std::vector<std::shared_ptr<Session>> open;
  std::lock_guard lock(mutex_);
  for (const auto& entry : sessions_) {
    if (auto session = entry.second.lock()) open.push_back(std::move(session));
  }
  return open;
}

// Both act outside the lock: a session that closes removes itself.
void SessionRegistry::drain_all() {
  for (auto& session : open_sessions()) session->drain();
}

void SessionRegistry::abort_all() {
  for (auto& session : open_sessions()) session->abort();
}

bool SessionRegistry::wait_empty(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return emptied_.wait_for(lock, timeout, [&] { return sessions_.empty(); });
}

}  // namespace tenure
