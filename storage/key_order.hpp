#pragma once
// A checkpoint's keys handed out in key order, a chunk at a time, sorted lazily: the leftmost
// range not yet in order is split at its median until it fits a chunk, so each chunk costs a
// share of one sort of all of them, and no chunk holds the writer for the whole sort.
#include <cstddef>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace tenure::storage {

class KeyOrder {
 public:
  KeyOrder() = default;
  explicit KeyOrder(std::vector<std::string_view> keys);

  // The next `chunk` keys or more (fewer at the end), each after every key handed out before.
  std::span<const std::string_view> next(std::size_t chunk);
  bool done() const { return next_ == keys_.size(); }
  std::size_t size() const { return keys_.size(); }

 private:
  std::vector<std::string_view> keys_;
  std::size_t next_ = 0;
  // The ranges of keys_[next_..] not yet in order, leftmost last.
  std::vector<std::pair<std::size_t, std::size_t>> unsorted_;
};

}  // namespace tenure::storage
