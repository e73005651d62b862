#pragma once
// A checkpoint's keys handed out in key order, a chunk at a time, sorted lazily: the leftmost
// range not yet in order is split at its median until it fits a chunk, so each chunk costs a
// share of one sort of all of them, and no chunk holds the writer for the whole sort.
#include <cstddef>
#include <cstdint>
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
  // A key and the 8 bytes after the prefix all keys share, as a big-endian number: most
  // comparisons of a sort are then one integer comparison instead of a memcmp of the prefix.
  struct Ranked {
    std::uint64_t rank;
    std::string_view key;
  };

  std::vector<Ranked> ranked_;
  std::vector<std::string_view> keys_;  // keys_[..next_] in order
  std::size_t next_ = 0;
  // The ranges of ranked_[next_..] not yet in order, leftmost last.
  std::vector<std::pair<std::size_t, std::size_t>> unsorted_;
};

}  // namespace tenure::storage
