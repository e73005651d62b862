#include "bench/load/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tenure::bench {

std::size_t Histogram::index_of(std::uint64_t v) {
  if (v < kSub) return static_cast<std::size_t>(v);
  int shift = std::bit_width(v) - kSubBits;  // >= 1: v >> shift lies in [kHalf, kSub)
  if (shift > kMaxShift) return kBuckets - 1;
  return static_cast<std::size_t>(kSub + (shift - 1) * kHalf + ((v >> shift) - kHalf));
}

std::uint64_t Histogram::highest_in(std::size_t index) {
  if (index < kSub) return index;
  std::size_t shift = (index - kSub) / kHalf + 1;
  std::uint64_t top = (index - kSub) % kHalf + kHalf;
  return ((top + 1) << shift) - 1;
}

void Histogram::record(std::uint64_t micros) {
  ++counts_[index_of(micros)];
  ++total_;
  max_ = std::max(max_, micros);
}

void Histogram::merge(const Histogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  max_ = std::max(max_, other.max_);
}

std::uint64_t Histogram::percentile(double percent) const {
  if (total_ == 0) return 0;
  auto wanted =
      static_cast<std::uint64_t>(std::ceil(percent / 100.0 * static_cast<double>(total_)));
  wanted = std::clamp<std::uint64_t>(wanted, 1, total_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= wanted) return std::min(highest_in(i), max_);
  }
  return max_;
}

}  // namespace tenure::bench
