#include "transports/session_registry.hpp"

#include "transports/conversation.hpp"

namespace tenure {

std::string_view to_string(Transport transport) {
  return transport == Transport::unix_socket ? "unix" : "websocket";
}

void SessionRegistry::add(const std::shared_ptr<Conversation>& session) {
  std::lock_guard lock(mutex_);
  if (sessions_.emplace(session.get(), session).second) {
    ++counts_[static_cast<std::size_t>(session->transport())];
    if (size_hook_) size_hook_(sessions_.size());
  }
}

void SessionRegistry::remove(const Conversation* session) {
  std::lock_guard lock(mutex_);
  if (sessions_.erase(session) == 0) return;
  --counts_[static_cast<std::size_t>(session->transport())];
  if (size_hook_) size_hook_(sessions_.size());
  if (sessions_.empty()) emptied_.notify_all();
}

std::size_t SessionRegistry::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::size_t SessionRegistry::size(Transport transport) const {
  std::lock_guard lock(mutex_);
  return counts_[static_cast<std::size_t>(transport)];
}

std::vector<std::shared_ptr<Conversation>> SessionRegistry::open_sessions() const {
  std::vector<std::shared_ptr<Conversation>> open;
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
