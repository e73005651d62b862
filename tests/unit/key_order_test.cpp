#include "storage/key_order.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

using tenure::storage::KeyOrder;

TEST_CASE("a checkpoint's keys come out in key order across all of its chunks", "[checkpoint]") {
  for (std::size_t count : {0, 1, 7, 100, 1000, 5003}) {
    std::vector<std::string> names;
    std::mt19937 random(static_cast<unsigned>(count));
    for (std::size_t i = 0; i < count; ++i) names.push_back("k/" + std::to_string(random()));
    std::vector<std::string_view> keys(names.begin(), names.end());
    KeyOrder order(keys);
    std::vector<std::string_view> out;
    while (!order.done()) {
      auto chunk = order.next(64);
      // A chunk is 64 keys or more, but the last; not a whole sort's worth at once.
      CHECK((chunk.size() >= 64 || order.done()));
      CHECK(chunk.size() < 128);
      out.insert(out.end(), chunk.begin(), chunk.end());
    }
    std::sort(keys.begin(), keys.end());
    CHECK(out == keys);  // every key once, all of them in order
  }
}

TEST_CASE("keys that share long prefixes, or are prefixes of others, still come out in key order",
          "[checkpoint]") {
  std::mt19937 random(7);
  std::vector<std::string> names;
  // Equal in the 8 bytes after the shared prefix, different after them; prefixes of each other;
  // bytes above 0x7f (UTF-8), which sort after ASCII as unsigned bytes.
  for (int i = 0; i < 300; ++i) {
    names.push_back("queue/shared-part/" + std::to_string(random() % 1000));
    names.push_back("queue/shared-part/12345678" + std::to_string(random()));
    names.push_back("queue/" + std::string(static_cast<std::size_t>(i % 40), 'q'));
    names.push_back("queue/sh\xc3\xa9" + std::to_string(i));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::shuffle(names.begin(), names.end(), random);
  std::vector<std::string_view> keys(names.begin(), names.end());
  KeyOrder order(keys);
  std::vector<std::string_view> out;
  while (!order.done()) {
    auto chunk = order.next(50);
    out.insert(out.end(), chunk.begin(), chunk.end());
  }
  std::sort(keys.begin(), keys.end());
  CHECK(out == keys);
}
