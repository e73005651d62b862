// tenure-bench: a load generator for tenured, and for the same fenced lock on Redis and etcd, so
// that all three are measured by one client. See docs/benchmarks.md.
//   tenure-bench --socket PATH [--connections N] [--pipeline D] [--mix M] [--rate R] ...
// Exit codes: 0 done, 1 bad arguments or nothing measured, 3 a lock-safety violation was seen.
#include <iostream>

#include "bench/load/config.hpp"
#include "bench/load/driver.hpp"
#include "bench/load/report.hpp"

int main(int argc, char** argv) {
  using namespace tenure::bench;
  Config config;
  if (auto code = parse_config(argc, argv, config)) return *code;
  RunResult result = run(config);
  if (config.json) {
    print_json(std::cout, config, result);
  } else {
    print_text(std::cout, config, result);
  }
  if (result.double_grants > 0 || result.token_regressions > 0) return 3;
  return result.stats.ops > 0 ? 0 : 1;
}
