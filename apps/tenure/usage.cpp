#include "apps/tenure/usage.hpp"

#include <algorithm>
#include <numeric>

#include "core/duration.hpp"

namespace tenure::cli {
namespace {

bool is_whole_number(const std::string& word) {
  return !word.empty() &&
         std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Edits (insert, delete, substitute) from a to b.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> prepare_args(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Only run and hold take a bare --wait; acquire's needs its duration.
  bool optional_wait = false;
  for (std::size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
    optional_wait = optional_wait || args[i] == "run" || args[i] == "hold";
    if (args[i] != "--wait" || !optional_wait) continue;
    // A bare number was meant as the duration: --wait's own check then asks for its unit.
    if (i + 1 < args.size() && (parse_duration(args[i + 1]) || is_whole_number(args[i + 1]))) {
      continue;
    }
    args[i] = "--wait=forever";
  }
  return args;
}

std::optional<std::string> unknown_subcommand(const std::vector<std::string>& args,
                                              const std::vector<std::string>& subcommands,
                                              const std::set<std::string>& valued_options,
                                              const std::set<std::string>& global_flags) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") return std::nullopt;
    if (valued_options.contains(word)) {
      ++i;
      continue;
    }
    if (word.starts_with("-")) continue;
    if (std::find(subcommands.begin(), subcommands.end(), word) != subcommands.end()) {
      return std::nullopt;
    }
    std::string message = "unknown subcommand '" + word + "'";
    // `tenure --owner x acquire k`: a subcommand's option before the subcommand.
    if (i > 0 && args[i - 1].starts_with("--") && args[i - 1].find('=') == std::string::npos &&
        !global_flags.contains(args[i - 1])) {
      return message + " (if it is the value of " + args[i - 1] + ", put " + args[i - 1] +
             " after the subcommand: it is the subcommand's option)";
    }
    const std::string* best = nullptr;
    std::size_t best_distance = 3;  // farther than 2 edits is no longer a typo
    for (const std::string& name : subcommands) {
      std::size_t d = edit_distance(word, name);
      if (d < best_distance) {
        best = &name;
        best_distance = d;
      }
    }
    if (best) message += " (did you mean " + *best + "?)";
    return message;
  }
  return std::nullopt;
}

}  // namespace tenure::cli
