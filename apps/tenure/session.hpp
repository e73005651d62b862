#pragma once
// What every subcommand shares: the global options, connecting, and turning a reply into output
// and an exit code (contract §9).
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "apps/tenure/client.hpp"
#include "apps/tenure/message.hpp"
#include "client/options.hpp"
#include "core/clock.hpp"

namespace tenure::cli {

struct Globals {
  std::optional<std::string> socket;
  bool json = false;
  Millis timeout = 30'000;
};

// The client library's options for the daemon the globals name: its socket (resolved by the
// library, by the same rule), or a cluster's sockets as endpoints to fail over between. Every
// call's timeout is the globals'.
client::ClientOptions client_options(const Globals& globals);

// Connects to the daemon the globals name. A blocking acquire is answered only when its wait
// ends, so `wait` stretches the reply timeout to cover it.
Client connect(const Globals& globals, std::optional<Millis> wait = std::nullopt);

// The exit code a reply means, given the status that is success for the request.
int exit_code(const Message& reply, std::string_view success);

// One line explaining an unsuccessful reply: a conflict, an error, or an unexpected status.
std::string explain_failure(const Message& reply);

// Prints a reply — verbatim with --json; else `describe` on success, a conflict on stdout, an
// error on stderr — and returns its exit code.
int report(const Globals& globals, const Message& reply, std::string_view success,
           const std::function<std::string(Fields)>& describe);

}  // namespace tenure::cli
