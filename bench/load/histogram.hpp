#pragma once
// A log-linear latency histogram in the manner of HdrHistogram: exact below 128 µs, then 64
// linear sub-buckets per power of two (under 1.6% relative error), up to about 38 hours.
// One per thread, merged at the end: percentiles are only ever read from merged counts, never
// averaged across threads.
#include <array>
#include <cstdint>

namespace tenure::bench {

class Histogram {
 public:
  void record(std::uint64_t micros);
  void merge(const Histogram& other);
  void reset() { *this = Histogram{}; }

  std::uint64_t count() const { return total_; }
  std::uint64_t max() const { return max_; }
  // The smallest recorded value v such that at least `percent` of all values are <= v, reported
  // as the highest value its bucket stands for (as HdrHistogram does); 0 when empty.
  std::uint64_t percentile(double percent) const;

 private:
  static constexpr int kSubBits = 7;
  static constexpr std::uint64_t kSub = 1ULL << kSubBits;  // exact values below this
  static constexpr std::uint64_t kHalf = kSub / 2;
  static constexpr int kMaxShift = 30;
  static constexpr std::size_t kBuckets = kSub + kMaxShift * kHalf;

  static std::size_t index_of(std::uint64_t v);
  static std::uint64_t highest_in(std::size_t index);

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t total_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace tenure::bench
