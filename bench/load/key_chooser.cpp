#include "bench/load/key_chooser.hpp"

#include <algorithm>
#include <cmath>

namespace tenure::bench {
namespace {

// Of hot:K, the share of cycles that go to the K hot keys.
constexpr double kHotShare = 0.9;

}  // namespace

std::shared_ptr<const std::vector<double>> KeyChooser::zipf_table(const Config& config) {
  if (config.dist != Dist::zipf) return nullptr;
  auto cdf = std::make_shared<std::vector<double>>(config.keys);
  double sum = 0;
  for (std::size_t rank = 0; rank < config.keys; ++rank) {
    sum += 1.0 / std::pow(static_cast<double>(rank + 1), config.zipf_s);
    (*cdf)[rank] = sum;
  }
  for (double& c : *cdf) c /= sum;
  return cdf;
}

KeyChooser::KeyChooser(const Config& config, std::shared_ptr<const std::vector<double>> zipf,
                       std::uint64_t seed)
    : dist_(config.dist),
      keys_(config.keys),
      hot_keys_(std::min(config.hot_keys, config.keys)),
      zipf_(std::move(zipf)),
      rng_(seed) {}

std::size_t KeyChooser::next() {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  switch (dist_) {
    case Dist::uniform:
      break;
    case Dist::zipf: {
      auto at = std::lower_bound(zipf_->begin(), zipf_->end(), unit(rng_));
      return std::min<std::size_t>(static_cast<std::size_t>(at - zipf_->begin()), keys_ - 1);
    }
    case Dist::hot:
      if (unit(rng_) < kHotShare)
        return std::uniform_int_distribution<std::size_t>(0, hot_keys_ - 1)(rng_);
      break;
  }
  return std::uniform_int_distribution<std::size_t>(0, keys_ - 1)(rng_);
}

}  // namespace tenure::bench
