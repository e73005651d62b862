#include "storage/key_order.hpp"

#include <algorithm>

namespace tenure::storage {

namespace {

std::size_t shared_prefix(const std::vector<std::string_view>& keys) {
  if (keys.empty()) return 0;
  std::size_t length = keys.front().size();
  for (std::string_view key : keys) {
    length = std::min(length, key.size());
    length = static_cast<std::size_t>(
        std::mismatch(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(length),
                      keys.front().begin())
            .first -
        key.begin());
  }
  return length;
}

// Bytes past the key's end count as 0, below every byte a longer key has there, so a key that
// is a prefix of another ranks no higher, as in key order; equal ranks compare the whole keys.
std::uint64_t rank_after(std::string_view key, std::size_t prefix) {
  std::uint64_t rank = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    const std::size_t at = prefix + i;
    const auto byte = at < key.size() ? static_cast<unsigned char>(key[at]) : 0u;
    rank = (rank << 8) | byte;
  }
  return rank;
}

}  // namespace

KeyOrder::KeyOrder(std::vector<std::string_view> keys) : keys_(std::move(keys)) {
  const std::size_t prefix = shared_prefix(keys_);
  ranked_.reserve(keys_.size());
  for (std::string_view key : keys_) ranked_.push_back({rank_after(key, prefix), key});
  if (!keys_.empty()) unsorted_.emplace_back(0, keys_.size());
}

std::span<const std::string_view> KeyOrder::next(std::size_t chunk) {
  auto at = [&](std::size_t i) { return ranked_.begin() + static_cast<std::ptrdiff_t>(i); };
  auto before = [](const Ranked& a, const Ranked& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.key < b.key;
  };
  const std::size_t begin = next_;
  while (next_ - begin < chunk && !unsorted_.empty()) {
    auto [lo, hi] = unsorted_.back();
    if (hi - lo > chunk) {
      const std::size_t mid = lo + (hi - lo) / 2;
      std::nth_element(at(lo), at(mid), at(hi), before);
      unsorted_.back().first = mid;
      unsorted_.emplace_back(lo, mid);
      continue;
    }
    std::sort(at(lo), at(hi), before);
    for (std::size_t i = lo; i < hi; ++i) keys_[i] = ranked_[i].key;
    unsorted_.pop_back();
    next_ = hi;
  }
  return {keys_.data() + begin, next_ - begin};
}

}  // namespace tenure::storage
