#include "tests/e2e/prometheus.hpp"

#include <cmath>
#include <cstdlib>
#include <set>

namespace e2e {
namespace {

bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool name_char(char c) { return name_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

// Reads a metric or label name at `pos`; empty when there is none.
std::string read_name(std::string_view line, std::size_t& pos, bool label) {
  std::size_t start = pos;
  if (pos >= line.size() || !name_start(line[pos]) || (label && line[pos] == ':')) return {};
  while (pos < line.size() && name_char(line[pos]) && !(label && line[pos] == ':')) ++pos;
  return std::string(line.substr(start, pos - start));
}

bool parse_value(std::string_view text, double& value) {
  if (text == "NaN") return value = NAN, true;
  if (text == "+Inf") return value = INFINITY, true;
  if (text == "-Inf") return value = -INFINITY, true;
  std::string s(text);
  char* end = nullptr;
  value = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string series;
  double value = 0;
};

// Parses a sample line; the problem, if any, in `problem`.
bool parse_sample(std::string_view line, Sample& sample, std::string& problem) {
  std::size_t pos = 0;
  sample.name = read_name(line, pos, false);
  if (sample.name.empty()) return problem = "no metric name", false;
  if (pos < line.size() && line[pos] == '{') {
    ++pos;
    while (pos < line.size() && line[pos] != '}') {
      std::string label = read_name(line, pos, true);
      if (label.empty()) return problem = "bad label name", false;
      if (line.substr(pos, 2) != "=\"") return problem = "label " + label + " lacks =\"", false;
      pos += 2;
      std::string value;
      for (;;) {
        if (pos >= line.size()) return problem = "unterminated label value", false;
        char c = line[pos++];
        if (c == '"') break;
        if (c == '\\') {
          if (pos >= line.size()) return problem = "dangling escape", false;
          char e = line[pos++];
          if (e != '\\' && e != '"' && e != 'n') return problem = "bad escape", false;
          value.push_back(e == 'n' ? '\n' : e);
        } else {
          value.push_back(c);
        }
      }
      if (!sample.labels.emplace(label, value).second) return problem = "repeated label", false;
      if (pos < line.size() && line[pos] == ',') ++pos;
    }
    if (pos >= line.size()) return problem = "unterminated labels", false;
    ++pos;
  }
  sample.series = std::string(line.substr(0, pos));
  if (pos >= line.size() || line[pos] != ' ') return problem = "no space before the value", false;
  std::string_view rest = line.substr(pos + 1);
  std::string_view value = rest.substr(0, rest.find(' '));
  if (!parse_value(value, sample.value)) return problem = "bad value", false;
  if (value.size() < rest.size()) {
    std::string_view timestamp = rest.substr(value.size() + 1);
    char* end = nullptr;
    std::string t(timestamp);
    std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || end != t.c_str() + t.size()) return problem = "bad timestamp", false;
  }
  return true;
}

// The family a sample belongs to, given the types declared so far.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      std::string base = name.substr(0, name.size() - suffix.size());
      auto type = types.find(base);
      if (type != types.end() && (type->second == "histogram" || type->second == "summary")) {
        return base;
      }
    }
  }
  return name;
}

// Digits of a number's mantissa, leading zeros aside: a bound printed as 0.00025499999999999996
// (float noise of 255 * 1e-6) has 17, a clean one such as 0.000255 three.
std::size_t significant_digits(std::string_view text) {
  text = text.substr(0, text.find_first_of("eE"));
  std::size_t digits = 0;
  bool leading = true;
  for (char c : text) {
    if (c < '0' || c > '9') continue;
    if (leading && c == '0') continue;
    leading = false;
    ++digits;
  }
  return digits;
}

void check_histograms(const std::vector<Sample>& samples, Exposition& out) {
  struct Buckets {
    std::vector<std::pair<double, double>> by_le;  // in order of appearance
    double count = -1;
    bool sum = false;
  };
  std::map<std::string, Buckets> series;  // family + labels without le
  for (const Sample& s : samples) {
    std::string family = family_of(s.name, out.types);
    if (out.types[family] != "histogram") continue;
    auto labels = s.labels;
    auto le = labels.find("le");
    std::string key = family;
    std::string le_text;
    if (le != labels.end()) {
      le_text = le->second;
      labels.erase(le);
    }
    for (const auto& [k, v] : labels) key += "," + k + "=" + v;
    if (s.name == family + "_bucket") {
      double bound = 0;
      if (le_text.empty() || !parse_value(le_text, bound)) {
        out.problems.push_back(s.series + ": bucket without a valid le");
        continue;
      }
      if (significant_digits(le_text) > 15) {
        out.problems.push_back(s.series + ": le printed with floating-point noise");
      }
      series[key].by_le.emplace_back(bound, s.value);
    } else if (s.name == family + "_count") {
      series[key].count = s.value;
    } else if (s.name == family + "_sum") {
      series[key].sum = true;
    }
  }
  for (const auto& [key, b] : series) {
    for (std::size_t i = 1; i < b.by_le.size(); ++i) {
      if (b.by_le[i].first <= b.by_le[i - 1].first || b.by_le[i].second < b.by_le[i - 1].second) {
        out.problems.push_back(key + ": buckets not increasing and cumulative");
      }
    }
    if (b.by_le.empty() || !std::isinf(b.by_le.back().first)) {
      out.problems.push_back(key + ": no le=\"+Inf\" bucket");
    } else if (b.count != b.by_le.back().second) {
      out.problems.push_back(key + ": _count differs from the +Inf bucket");
    }
    if (!b.sum) out.problems.push_back(key + ": no _sum");
  }
}

}  // namespace

Exposition parse_exposition(std::string_view text) {
  Exposition out;
  if (!text.empty() && text.back() != '\n') out.problems.push_back("no newline at the end");
  std::set<std::string> helped;
  std::set<std::string> sampled_families;
  std::vector<Sample> samples;
  std::size_t number = 0;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++number;
    std::string where = "line " + std::to_string(number) + " (" + std::string(line) + "): ";
    if (line.empty()) continue;
    if (line.front() == '#') {
      bool help = line.starts_with("# HELP ");
      bool type = line.starts_with("# TYPE ");
      if (!help && !type) continue;  // a comment
      std::size_t pos = 7;
      std::string name = read_name(line, pos, false);
      if (name.empty() || (pos < line.size() && line[pos] != ' ')) {
        out.problems.push_back(where + "bad metric name");
        continue;
      }
      if (help && !helped.insert(name).second) out.problems.push_back(where + "second HELP");
      if (type) {
        std::string kind(pos < line.size() ? line.substr(pos + 1) : "");
        static const std::set<std::string> kKinds{"counter", "gauge", "histogram", "summary",
                                                  "untyped"};
        if (!kKinds.contains(kind)) out.problems.push_back(where + "unknown type");
        if (!out.types.emplace(name, kind).second) out.problems.push_back(where + "second TYPE");
        if (sampled_families.contains(name)) {
          out.problems.push_back(where + "TYPE after samples of its family");
        }
      }
      continue;
    }
    Sample sample;
    std::string problem;
    if (!parse_sample(line, sample, problem)) {
      out.problems.push_back(where + problem);
      continue;
    }
    sampled_families.insert(family_of(sample.name, out.types));
    if (!out.samples.emplace(sample.series, sample.value).second) {
      out.problems.push_back(where + "repeated series");
    }
    samples.push_back(std::move(sample));
  }
  check_histograms(samples, out);
  return out;
}

}  // namespace e2e
