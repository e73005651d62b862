#include "bench/load/expiry_ledger.hpp"

#include <charconv>

namespace tenure::bench {

void raise_to(std::atomic<std::int64_t>& value, std::int64_t candidate) {
  std::int64_t seen = value.load();
  while (seen < candidate && !value.compare_exchange_weak(seen, candidate)) {
  }
}

ExpiryLedger::ExpiryLedger(std::string prefix, std::size_t keys, std::size_t watchers)
    : prefix_(std::move(prefix)),
      expires_at_ms_(keys),
      tokens_(keys),
      lost_(keys),
      watched_(watchers, std::vector<std::uint8_t>(keys)) {}

std::optional<std::size_t> ExpiryLedger::index(std::string_view key) const {
  if (!key.starts_with(prefix_)) return std::nullopt;
  key.remove_prefix(prefix_.size());
  std::size_t n = 0;
  auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), n);
  if (error != std::errc{} || end != key.data() + key.size() || n >= expires_at_ms_.size()) {
    return std::nullopt;
  }
  return n;
}

void ExpiryLedger::expect(std::size_t key, std::uint64_t token, std::int64_t expires_at_ms) {
  tokens_[key].store(token);
  expires_at_ms_[key].store(expires_at_ms);  // after the token: a reader that sees it sees both
  ++expected_;
  raise_to(last_deadline_ms_, expires_at_ms);
}

ExpiryLedger::Delivery ExpiryLedger::lost(std::string_view key, std::uint64_t token,
                                          std::int64_t received_ms) {
  return deliver(lost_, lost_firsts_, key, token, received_ms);
}

ExpiryLedger::Delivery ExpiryLedger::watched(std::size_t watcher, std::string_view key,
                                             std::uint64_t token, std::int64_t received_ms) {
  return deliver(watched_[watcher], watched_firsts_, key, token, received_ms);
}

ExpiryLedger::Delivery ExpiryLedger::deliver(std::vector<std::uint8_t>& seen,
                                             std::atomic<std::uint64_t>& firsts,
                                             std::string_view key, std::uint64_t token,
                                             std::int64_t received_ms) {
  auto n = index(key);
  if (!n) return {};
  std::int64_t deadline = expires_at_ms_[*n].load();
  if (deadline == 0 || tokens_[*n].load() != token) return {};
  if (seen[*n]) return {Arrival::duplicate, deadline};
  seen[*n] = 1;
  ++firsts;
  last_delivery_ms_.store(received_ms);
  return {Arrival::first, deadline};
}

bool ExpiryLedger::complete() const {
  std::uint64_t expected = expected_.load();
  return lost_firsts_.load() == expected && watched_firsts_.load() == expected * watched_.size();
}

}  // namespace tenure::bench
