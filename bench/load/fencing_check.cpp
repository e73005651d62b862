#include "bench/load/fencing_check.hpp"

#include <algorithm>

namespace tenure::bench {

void FencingCheck::acquired(std::size_t key, std::uint64_t owner, std::uint64_t token,
                            std::int64_t sent, std::int64_t received, std::int64_t ttl_ns) {
  std::lock_guard lock(stripe(key));
  KeyView& k = keys_[key];
  ++checked_;
  if (k.holder != 0 && k.holder != owner && k.holder_received <= sent && received < k.belief_ends) {
    ++double_grants_;
  }
  if (k.last_token_received != 0 && k.last_token_received <= sent && token <= k.last_token) {
    ++token_regressions_;
  }
  if (received >= k.holder_received) {
    k.holder = owner;
    k.holder_received = received;
    k.belief_ends = sent + ttl_ns;
  }
  if (token > k.last_token) {
    k.last_token = token;
    k.last_token_received = received;
  }
}

void FencingCheck::releasing(std::size_t key, std::uint64_t owner, std::int64_t now) {
  std::lock_guard lock(stripe(key));
  KeyView& k = keys_[key];
  if (k.holder == owner) k.belief_ends = std::min(k.belief_ends, now);
}

}  // namespace tenure::bench
