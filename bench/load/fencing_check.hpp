#pragma once
// Lock safety as the clients see it, checked on every acquire while the load runs. Only
// violations that are certain from the client's side are counted, so a loaded or slow
// machine never produces a false alarm:
// - double grant: an `acquired` whose request was sent after another owner's `acquired` for
//   the same key arrived, and which arrived while that owner still believed it held the key
//   (it had not yet sent its release and its TTL, counted from its send, had not run out);
// - token regression: an `acquired` whose request was sent after an earlier `acquired` of the
//   same key arrived, with a token not above that one's.
// Shared by all client threads; keys are striped over mutexes.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tenure::bench {

class FencingCheck {
 public:
  explicit FencingCheck(std::size_t keys) : keys_(keys) {}

  // Times are steady-clock nanoseconds; `owner` is unique per lock cycle.
  void acquired(std::size_t key, std::uint64_t owner, std::uint64_t token, std::int64_t sent,
                std::int64_t received, std::int64_t ttl_ns);
  void releasing(std::size_t key, std::uint64_t owner, std::int64_t now);

  std::uint64_t checked() const { return checked_.load(); }
  std::uint64_t double_grants() const { return double_grants_.load(); }
  std::uint64_t token_regressions() const { return token_regressions_.load(); }

 private:
  struct KeyView {
    std::uint64_t holder = 0;  // 0: nobody we know of
    std::int64_t holder_received = 0;
    std::int64_t belief_ends = 0;
    std::uint64_t last_token = 0;
    std::int64_t last_token_received = 0;
  };
  std::mutex& stripe(std::size_t key) { return stripes_[key % stripes_.size()]; }

  std::vector<KeyView> keys_;
  std::array<std::mutex, 256> stripes_;
  std::atomic<std::uint64_t> checked_{0};
  std::atomic<std::uint64_t> double_grants_{0};
  std::atomic<std::uint64_t> token_regressions_{0};
};

}  // namespace tenure::bench
