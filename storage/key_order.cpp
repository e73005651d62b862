#include "storage/key_order.hpp"

#include <algorithm>

namespace tenure::storage {

KeyOrder::KeyOrder(std::vector<std::string_view> keys) : keys_(std::move(keys)) {
  if (!keys_.empty()) unsorted_.emplace_back(0, keys_.size());
}

std::span<const std::string_view> KeyOrder::next(std::size_t chunk) {
  auto at = [&](std::size_t i) { return keys_.begin() + static_cast<std::ptrdiff_t>(i); };
  const std::size_t begin = next_;
  while (next_ - begin < chunk && !unsorted_.empty()) {
    auto [lo, hi] = unsorted_.back();
    if (hi - lo > chunk) {
      const std::size_t mid = lo + (hi - lo) / 2;
      std::nth_element(at(lo), at(mid), at(hi));
      unsorted_.back().first = mid;
      unsorted_.emplace_back(lo, mid);
      continue;
    }
    std::sort(at(lo), at(hi));
    unsorted_.pop_back();
    next_ = hi;
  }
  return {keys_.data() + begin, next_ - begin};
}

}  // namespace tenure::storage
