#pragma once
// The open sessions of a server, of every transport: how many there are (--max-connections,
// stats, metrics) and, at shutdown, the way to drain them and to wait until they are gone.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tenure {

class Conversation;

enum class Transport : std::uint8_t { unix_socket, websocket, count };

std::string_view to_string(Transport transport);

class SessionRegistry {
 public:
  void add(const std::shared_ptr<Conversation>& session);
  void remove(const Conversation* session);
  std::size_t size() const;
  std::size_t size(Transport transport) const;
  // Every session stops reading and closes once its requests are answered.
  void drain_all();
  // Every session closes now.
  void abort_all();
  // Blocks until every session is gone or the timeout passes; false on timeout.
  bool wait_empty(std::chrono::milliseconds timeout);
  // `hook` is told how many sessions are open after each add or remove, in their order; it runs
  // under the registry's lock, so it must not call the registry. Set it before the first add.
  void on_size(std::function<void(std::size_t)> hook) { size_hook_ = std::move(hook); }

 private:
  std::vector<std::shared_ptr<Conversation>> open_sessions() const;

  mutable std::mutex mutex_;
  std::condition_variable emptied_;
  std::unordered_map<const Conversation*, std::weak_ptr<Conversation>> sessions_;
  std::array<std::size_t, static_cast<std::size_t>(Transport::count)> counts_{};
  std::function<void(std::size_t)> size_hook_;
};

}  // namespace tenure
