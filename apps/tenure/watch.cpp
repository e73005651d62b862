#include "apps/tenure/watch.hpp"

#include <iostream>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/output.hpp"
#include "client/client.hpp"

namespace tenure::cli {

int watch_command(const Globals& g, const std::optional<std::string>& prefix,
                  const std::optional<std::string>& key, std::optional<std::uint64_t> from) {
  const std::chrono::milliseconds timeout(g.timeout);
  client::ClientOptions options = client_options(g);
  auto client = client::Client::connect(options);
  if (!client) throw CliError(client.error().message);
  // The client library's watch resumes by itself (after the connection's loss, on the next
  // socket; after `lagged`) from the revision after the last event it gave, so nothing printed
  // is printed twice and nothing is missed. With one socket, a daemon that went away ends the
  // watch at once (exit 1, as the server unreachable does), unless it answers again at once.
  const bool several = options.endpoints.size() > 1;
  auto watch = client->watch({.prefix = prefix,
                              .key = key,
                              .from_revision = from,
                              .resume_for = several ? timeout : std::chrono::milliseconds(0)});
  if (!watch) {
    // The server's refusal, verbatim (§9), as for any other command.
    if (g.json && !watch.error().line.empty()) std::cout << watch.error().line << std::endl;
    throw CliError(watch.error().message);
  }
  if (g.json) {
    std::cout << watch->watching().line << std::endl;
  } else {
    // On stderr, so that stdout carries nothing but events.
    std::cerr << "watching "
              << (key      ? *key
                  : prefix ? "prefix " + *prefix
                           : "all keys")
              << ", server at revision " << watch->watching().revision << '\n';
  }
  for (;;) {
    auto event = watch->next(timeout);
    if (event) {
      // Flushed per event: a watch is usually read live, often through a pipe.
      std::cout << (g.json ? event->line : describe_event(Message(event->line).fields()))
                << std::endl;
      continue;
    }
    if (event.error().is(protocol::client_errc::timeout)) {
      // Quiet for a while: a node that stalls sends no events either. A ping it leaves
      // unanswered moves the connection, and the watch with it, to the next socket.
      (void)client->ping();
      continue;
    }
    if (g.json && !event.error().line.empty()) std::cout << event.error().line << std::endl;
    std::cerr << "tenure: " << event.error().message;
    if (!event.error().is(protocol::client_errc::compacted)) {
      std::cerr << "; resume with --from " << watch->next_revision();
    }
    std::cerr << '\n';
    return kExitError;
  }
}

}  // namespace tenure::cli
