#pragma once
// A checker for the Prometheus text exposition format (version 0.0.4), for testing /metrics:
// every line is a comment, a HELP or TYPE line, or a well-formed sample; HELP and TYPE come at
// most once per family and TYPE before its samples; no series repeats; histogram buckets are
// cumulative, end with le="+Inf", agree with _count, have a _sum, and their bounds print without
// floating-point noise.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace e2e {

struct Exposition {
  std::vector<std::string> problems;         // empty when the text is well-formed
  std::map<std::string, double> samples;     // by series as written: name{labels}
  std::map<std::string, std::string> types;  // family -> counter, gauge, histogram, ...
};

Exposition parse_exposition(std::string_view text);

}  // namespace e2e
