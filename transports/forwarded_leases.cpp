#include "transports/forwarded_leases.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace tenure {
namespace {

// The ends kept for leases orphaned after them: more than a pause of a few seconds sees, at a
// few hundred bytes each.
constexpr std::size_t kRecentEnds = 16'384;

bool is_end(const Event& event) {
  return event.type == EventType::expired || event.type == EventType::revoked;
}

}  // namespace

ForwardedLeases::ForwardedLeases(EventBus& bus, std::function<void(ConnId, Event)> tell)
    : bus_(bus), tell_(std::move(tell)) {}

void ForwardedLeases::granted(const std::string& key, Token token, ConnId conn,
                              const std::string& node) {
  bool subscribe = false;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    auto& held = by_key_[key];
    for (std::size_t i = held.size(); i-- > 0;) {
      if (held[i].token == token) erase(key, held, i);
    }
    held.push_back(Held{token, conn, node, false, std::nullopt});
    keys_of_conn_[conn].push_back(key);
    subscribe = take_subscription();
  }
  // Outside the lock: the bus may be publishing to us, which takes it.
  if (subscribe) bus_.subscribe(shared_from_this());
}

bool ForwardedLeases::take_subscription() {
  if (subscribed_ || stopped_) return false;
  subscribed_ = true;
  return true;
}

void ForwardedLeases::follow() {
  bool subscribe = false;
  {
    std::lock_guard lock(mutex_);
    subscribe = take_subscription();
  }
  if (subscribe) bus_.subscribe(shared_from_this());
}

void ForwardedLeases::unowned(const std::string& key, Token token, ConnId conn, bool granted_here) {
  bool subscribe = false;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    auto found = by_key_.find(key);
    if (found != by_key_.end()) {
      auto& held = found->second;
      for (std::size_t i = held.size(); i-- > 0;) {
        if (held[i].token != token || held[i].conn != conn) continue;
        held[i].orphaned = true;
        if (held[i].end) {
          tell_(conn, std::move(*held[i].end));
          erase(key, held, i);
        }
        if (held.empty()) by_key_.erase(found);
        return;
      }
    }
    if (!granted_here) return;  // its end was told, or its holder released it
    if (auto ends = recent_ends_.find(key); ends != recent_ends_.end()) {
      for (const Event& end : ends->second) {
        if (end.token != token) continue;
        tell_(conn, end);
        return;
      }
    }
    by_key_[key].push_back(Held{token, conn, {}, true, std::nullopt});
    keys_of_conn_[conn].push_back(key);
    subscribe = take_subscription();
  }
  if (subscribe) bus_.subscribe(shared_from_this());
}

void ForwardedLeases::remember_end(const Event& event) {
  recent_ends_[event.key].push_back(event);
  recent_order_.push_back(event.key);
  if (recent_order_.size() <= kRecentEnds) return;
  auto oldest = recent_ends_.find(recent_order_.front());
  oldest->second.erase(oldest->second.begin());
  if (oldest->second.empty()) recent_ends_.erase(oldest);
  recent_order_.pop_front();
}

void ForwardedLeases::ended(const std::string& key, Token token) { forget(key, token, 0); }

void ForwardedLeases::moved(const std::string& key, Token token, ConnId conn) {
  forget(key, token, conn);
}

void ForwardedLeases::forget(const std::string& key, Token token, ConnId conn) {
  std::lock_guard lock(mutex_);
  auto found = by_key_.find(key);
  if (found == by_key_.end()) return;
  auto& held = found->second;
  for (std::size_t i = held.size(); i-- > 0;) {
    if (held[i].token == token && (conn == 0 || held[i].conn == conn)) erase(key, held, i);
  }
  if (held.empty()) by_key_.erase(found);
}

void ForwardedLeases::disconnected(ConnId conn) {
  std::lock_guard lock(mutex_);
  auto found = keys_of_conn_.find(conn);
  if (found == keys_of_conn_.end()) return;
  std::vector<std::string> keys = std::move(found->second);
  keys_of_conn_.erase(found);
  for (const std::string& key : keys) {
    auto entry = by_key_.find(key);
    if (entry == by_key_.end()) continue;
    auto& held = entry->second;
    std::erase_if(held, [&](const Held& h) { return h.conn == conn; });
    if (held.empty()) by_key_.erase(entry);
  }
}

void ForwardedLeases::orphan(const std::string& node) {
  std::lock_guard lock(mutex_);
  if (stopped_) return;
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    auto& held = it->second;
    for (std::size_t i = held.size(); i-- > 0;) {
      if (held[i].node != node) continue;
      held[i].orphaned = true;
      // It ended before the link broke, and the node's notice never came.
      if (held[i].end) {
        tell_(held[i].conn, std::move(*held[i].end));
        erase(it->first, held, i);
      }
    }
    it = held.empty() ? by_key_.erase(it) : std::next(it);
  }
}

void ForwardedLeases::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    if (!subscribed_) return;
    subscribed_ = false;
  }
  bus_.unsubscribe(this);
}

void ForwardedLeases::on_events(const EventBatch& events) {
  std::lock_guard lock(mutex_);
  if (stopped_) return;  // a publish that began before stop(): the router may be gone
  for (const Event& event : *events) {
    if (!is_end(event)) continue;
    remember_end(event);
    auto found = by_key_.find(event.key);
    if (found == by_key_.end()) continue;
    auto& held = found->second;
    for (std::size_t i = held.size(); i-- > 0;) {
      if (held[i].token != event.token) continue;
      if (!held[i].orphaned) {
        held[i].end = event;  // its node tells it, unless the link breaks first
        continue;
      }
      tell_(held[i].conn, event);
      erase(event.key, held, i);
    }
    if (held.empty()) by_key_.erase(found);
  }
}

void ForwardedLeases::on_gap(Revision resume_from) {
  std::lock_guard lock(mutex_);
  subscribed_ = false;  // the bus dropped us: the next grant or orphaning subscribes again
  spdlog::warn(
      "cluster: the events before revision {} were lost to this node; a lease taken through a "
      "node that is gone may end without its holder hearing of it",
      resume_from);
}

void ForwardedLeases::erase(const std::string& key, std::vector<Held>& held, std::size_t at) {
  ConnId conn = held[at].conn;
  held.erase(held.begin() + static_cast<std::ptrdiff_t>(at));
  auto keys = keys_of_conn_.find(conn);
  if (keys == keys_of_conn_.end()) return;
  auto& list = keys->second;
  if (auto k = std::find(list.begin(), list.end(), key); k != list.end()) list.erase(k);
  if (list.empty()) keys_of_conn_.erase(keys);
}

}  // namespace tenure
