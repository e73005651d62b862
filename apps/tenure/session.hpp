#pragma once
// What every subcommand shares: the global options, connecting, and turning a reply into output
// and an exit code (contract §9).
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Whether a request may be sent to another node after the one it was sent to gave no reply (the
// connection lost, or nothing within the timeout), when it may have been done there already, or
// answered `unavailable` (its keys moving to another node).
enum class Resend {
  safe,   // a read, or a mutation the contract makes a repeat of harmless (acquire by the same
          // owner, renew, release, keepalive)
  never,  // a repeat could do something else (revoke would end a later tenure): its outcome is
          // unknown
};

// The daemon the globals name, or a cluster's nodes, and the connection to the one in use.
class Session {
 public:
  // A blocking acquire is answered only when its wait ends, so `wait` stretches the reply timeout
  // to cover it.
  explicit Session(const Globals& globals, std::optional<Millis> wait = std::nullopt);

  // Sends build(id) and returns the reply. With several sockets, one that refuses the
  // connection, loses it or gives no reply within the timeout is left for the next, in order, and
  // the request is sent there, unless it was sent already and `resend` is never; so is one that
  // answers `unavailable` when `resend` is safe, and while one does, the sockets are tried again,
  // after a pause, within the timeout (the last such answer is then the reply). Throws CliError
  // naming each socket's problem when none replies; a request that may have been done says so.
  // When the server closed the connection before the request could be written, returns what it
  // said first (e.g. too_many_requests), if anything.
  Message call(const std::function<std::string(RequestId)>& build, Resend resend);

 private:
  std::vector<SocketChoice> sockets_;
  std::size_t current_ = 0;  // the socket in use, or tried next
  Millis timeout_;
  std::optional<Client> client_;
};

// Milliseconds left until `deadline`, at least 0.
Millis left_until(std::chrono::steady_clock::time_point deadline);

// The exit code a reply means, given the status that is success for the request.
int exit_code(const Message& reply, std::string_view success);

// One line explaining an unsuccessful reply: a conflict, an error, or an unexpected status.
std::string explain_failure(const Message& reply);

// Prints a reply — verbatim with --json; else `describe` on success, a conflict on stdout, an
// error on stderr — and returns its exit code.
int report(const Globals& globals, const Message& reply, std::string_view success,
           const std::function<std::string(Fields)>& describe);

}  // namespace tenure::cli
