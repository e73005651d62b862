#pragma once
// Usage mistakes caught before or around CLI11, with hints CLI11 cannot give.
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tenure::cli {

// argv[1..] with run's and hold's bare `--wait` (not followed by a duration) spelled
// `--wait=forever`, so that
// `run KEY --wait -- CMD` waits without limit instead of taking "--" as the duration.
std::vector<std::string> prepare_args(int argc, char** argv);

// "unknown subcommand 'aquire' (did you mean acquire?)" when the first word that is neither an
// option nor the value of one of `valued_options` names no subcommand. After an option that is
// not one of `global_flags` either, it says the option belongs after the subcommand.
std::optional<std::string> unknown_subcommand(const std::vector<std::string>& args,
                                              const std::vector<std::string>& subcommands,
                                              const std::set<std::string>& valued_options,
                                              const std::set<std::string>& global_flags = {});

}  // namespace tenure::cli
