#include "core/recycling_list.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

using tenure::RecyclingList;

namespace {

std::vector<int> values(const RecyclingList<std::shared_ptr<int>>& list) {
  std::vector<int> out;
  for (const auto& p : list) out.push_back(p ? *p : -1);
  return out;
}

}  // namespace

TEST_CASE("a recycling list is a FIFO that reuses its removed nodes", "[recycling_list]") {
  RecyclingList<std::shared_ptr<int>> list;
  for (int i = 0; i < 3; ++i) list.push_back(std::make_shared<int>(i));
  const std::shared_ptr<int>* first_node = &list.front();
  list.pop_front();
  CHECK(values(list) == std::vector<int>{1, 2});
  CHECK(list.spare() == 1);

  // The node removed first is the one the next insertion takes.
  list.push_back(std::make_shared<int>(3));
  CHECK(list.spare() == 0);
  CHECK(&*std::prev(list.end()) == first_node);
  CHECK(values(list) == std::vector<int>{1, 2, 3});
  CHECK(list.size() == 3);
}

TEST_CASE("a recycling list lets go of what it removes at once", "[recycling_list]") {
  RecyclingList<std::shared_ptr<int>> list;
  auto held = std::make_shared<int>(7);
  list.push_back(std::shared_ptr<int>(held));
  list.push_back(std::make_shared<int>(8));
  list.push_back(std::shared_ptr<int>(held));
  CHECK(held.use_count() == 3);

  list.erase_if([](const std::shared_ptr<int>& p) { return *p == 7; });
  CHECK(held.use_count() == 1);
  CHECK(values(list) == std::vector<int>{8});
  CHECK(list.spare() == 2);

  list.push_back(std::shared_ptr<int>(held));
  list.clear();
  CHECK(held.use_count() == 1);
  CHECK(list.empty());
  CHECK(list.spare() == 3);

  list.trim(1);
  CHECK(list.spare() == 1);
}

TEST_CASE("erasing from a recycling list returns the element after", "[recycling_list]") {
  RecyclingList<std::shared_ptr<int>> list;
  for (int i = 0; i < 4; ++i) list.push_back(std::make_shared<int>(i));
  for (auto it = list.begin(); it != list.end();) it = **it % 2 == 0 ? list.erase(it) : ++it;
  CHECK(values(list) == std::vector<int>{1, 3});
}
