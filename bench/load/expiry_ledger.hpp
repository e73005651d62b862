#pragma once
// Expiry (--mix expiry): the leases the run expects to expire and the deliveries of their
// expiry that arrived, per key, so that "every lease's expiry reached each listener exactly
// once" is counted for the acquiring connections (`lost`) and for every watcher (`expired`).
// Each key is acquired at most once and is named PREFIX<n>, so n indexes flat arrays
// (at 1M keys about 17 MB, plus 1 MB per watcher). Shared by all client threads.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tenure::bench {

// value = max(value, candidate), for maxima that several client threads raise.
void raise_to(std::atomic<std::int64_t>& value, std::int64_t candidate);

class ExpiryLedger {
 public:
  enum class Arrival {
    first,
    duplicate,
    unexpected,  // not a lease of this run, or another tenure of the key (token differs)
  };
  struct Delivery {
    Arrival arrival = Arrival::unexpected;
    std::int64_t expires_at_ms = 0;  // the deadline the acquire reply gave, for `first`
  };

  ExpiryLedger(std::string prefix, std::size_t keys, std::size_t watchers);

  // The n of PREFIX<n>, if `key` is one of the run's keys.
  std::optional<std::size_t> index(std::string_view key) const;
  // Key n was acquired: tenure `token`, deadline `expires_at_ms` (wall clock).
  void expect(std::size_t key, std::uint64_t token, std::int64_t expires_at_ms);
  // A `lost` event reached the connection that acquired the key. Only that connection
  // reports the key, so each key's flag has one writer.
  Delivery lost(std::string_view key, std::uint64_t token, std::int64_t received_ms);
  // An `expired` event reached watcher `watcher` (each watcher reports from one thread).
  Delivery watched(std::size_t watcher, std::string_view key, std::uint64_t token,
                   std::int64_t received_ms);

  std::uint64_t expected() const { return expected_.load(); }
  std::int64_t last_deadline_ms() const { return last_deadline_ms_.load(); }
  std::int64_t last_delivery_ms() const { return last_delivery_ms_.load(); }
  // Every expected lease's expiry reached its connection and every watcher.
  bool complete() const;

 private:
  Delivery deliver(std::vector<std::uint8_t>& seen, std::atomic<std::uint64_t>& firsts,
                   std::string_view key, std::uint64_t token, std::int64_t received_ms);

  std::string prefix_;
  std::vector<std::atomic<std::int64_t>> expires_at_ms_;  // 0: not expected
  std::vector<std::atomic<std::uint64_t>> tokens_;
  std::vector<std::uint8_t> lost_;
  std::vector<std::vector<std::uint8_t>> watched_;
  std::atomic<std::uint64_t> expected_{0};
  std::atomic<std::uint64_t> lost_firsts_{0};
  std::atomic<std::uint64_t> watched_firsts_{0};
  std::atomic<std::int64_t> last_deadline_ms_{0};
  std::atomic<std::int64_t> last_delivery_ms_{0};  // of a first delivery
};

}  // namespace tenure::bench
