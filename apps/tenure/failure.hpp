#pragma once
// How tenure fails: its exit codes (contract §9, plus `run`'s own) and the exception that carries
// a one-line explanation up to main.
#include <stdexcept>

namespace tenure::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // bad arguments, daemon unreachable, error replies
inline constexpr int kExitConflict = 4;  // held, not_holder
inline constexpr int kExitLost = 5;      // run: the lease was lost while the command ran

// A failure that main reports as "tenure: <what>" on stderr, exiting 1.
class CliError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The connection to tenured ended.
class ConnectionClosed : public CliError {
 public:
  using CliError::CliError;
};

}  // namespace tenure::cli
