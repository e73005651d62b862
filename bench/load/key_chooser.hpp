#pragma once
// Picks the key of each lock cycle by the configured distribution. One per client thread (the
// random engine is not shared); the zipf table is built once and shared read-only.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "bench/load/config.hpp"

namespace tenure::bench {

class KeyChooser {
 public:
  // The cumulative zipf weights for `config`, or null for the other distributions.
  static std::shared_ptr<const std::vector<double>> zipf_table(const Config& config);

  KeyChooser(const Config& config, std::shared_ptr<const std::vector<double>> zipf,
             std::uint64_t seed);

  std::size_t next();

 private:
  Dist dist_;
  std::size_t keys_;
  std::size_t hot_keys_;
  std::shared_ptr<const std::vector<double>> zipf_;
  std::mt19937_64 rng_;
};

}  // namespace tenure::bench
