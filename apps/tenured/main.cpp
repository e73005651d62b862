// tenured: the Tenure lease coordinator daemon.
#include <sys/stat.h>

#include <csignal>
#include <iostream>

#include "apps/tenured/daemon.hpp"
#include "apps/tenured/logging.hpp"
#include "apps/tenured/options.hpp"

int main(int argc, char** argv) {
  // Everything tenured creates is private to its user: data dir, ledger, socket (§7).
  ::umask(077);
  // A client that vanished is an error code on its connection, not a reason to die.
  std::signal(SIGPIPE, SIG_IGN);

  tenure::Options options;
  if (auto exit_code = tenure::parse_options(argc, argv, options)) return *exit_code;
  std::string error;
  if (!tenure::setup_logging(options.log_level, options.log_file, error)) {
    std::cerr << "tenured: " << error << "\n";
    return 1;
  }
  return tenure::run_daemon(options);
}
