#pragma once
// Prints a run's results: a few readable lines, or one JSON object (--json) for scripts.
#include <ostream>

#include "bench/load/config.hpp"
#include "bench/load/driver.hpp"

namespace tenure::bench {

void print_text(std::ostream& out, const Config& config, const RunResult& result);
void print_json(std::ostream& out, const Config& config, const RunResult& result);

}  // namespace tenure::bench
