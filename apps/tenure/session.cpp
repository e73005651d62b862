#include "apps/tenure/session.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/output.hpp"
#include "apps/tenure/socket_path.hpp"

namespace tenure::cli {
namespace {

using Steady = std::chrono::steady_clock;

// Time allowed beyond a blocking acquire's wait for the server to answer it.
constexpr Millis kWaitMargin = 5'000;
// The pause before going around the sockets again after a node answered `unavailable` (a
// failover settling), doubled each round up to the last.
constexpr Millis kFirstPause = 100;
constexpr Millis kMaxPause = 1'000;

bool is_unavailable(const Message& reply) {
  return reply.status() == "error" && string_field(reply.fields(), "error") == "unavailable";
}

bool is_conflict(std::string_view status) { return status == "held" || status == "not_holder"; }

}  // namespace

client::ClientOptions client_options(const Globals& globals) {
  client::ClientOptions options{.timeout = std::chrono::milliseconds(globals.timeout)};
  std::vector<SocketChoice> sockets = resolve_socket_paths(globals.socket);
  if (sockets.size() == 1) {
    options.socket = globals.socket;
  } else {
    for (const SocketChoice& socket : sockets) options.endpoints.push_back(socket.path);
  }
  return options;
}

Session::Session(const Globals& globals, std::optional<Millis> wait)
    : sockets_(resolve_socket_paths(globals.socket)),
      timeout_(wait ? std::max(globals.timeout, *wait + kWaitMargin) : globals.timeout) {}

Message Session::call(const std::function<std::string(RequestId)>& build, Resend resend) {
  const auto deadline = Steady::now() + std::chrono::milliseconds(timeout_);
  bool first_round = true;
  for (Millis pause = kFirstPause;; pause = std::min(pause * 2, kMaxPause), first_round = false) {
    std::string problems;
    std::optional<Message> unavailable;  // this round's last
    for (std::size_t tried = 0; tried < sockets_.size(); ++tried) {
      bool sent = false;
      try {
        if (!client_) client_.emplace(sockets_[current_], timeout_);
        RequestId id = 0;
        try {
          id = client_->send(build);
        } catch (const ConnectionClosed&) {
          if (auto farewell = client_->last_words()) return std::move(*farewell);
          throw;
        }
        sent = true;
        // Later rounds only within what is left of the timeout.
        Message reply = client_->await_reply(
            id, first_round ? std::nullopt : std::optional<Millis>(left_until(deadline)));
        // `unavailable` changed nothing (§3): a node whose keys are moving (a failover) says it.
        if (sockets_.size() == 1 || resend == Resend::never || !is_unavailable(reply)) {
          return reply;
        }
        unavailable = std::move(reply);
      } catch (const CliError& e) {
        if (sockets_.size() == 1) throw;
        problems += (problems.empty() ? "" : "; ") + std::string(e.what());
        if (sent && resend == Resend::never) {
          client_.reset();
          current_ = (current_ + 1) % sockets_.size();
          throw CliError(problems +
                         "; the request may have been done there, so it is not repeated on "
                         "another node");
        }
      }
      client_.reset();
      current_ = (current_ + 1) % sockets_.size();
    }
    // Only an answer says a node is there, settling: around again while the timeout lasts. The
    // last round's answer is the reply, else its problems are the error.
    if (!unavailable || left_until(deadline) <= pause) {
      if (unavailable) return std::move(*unavailable);
      throw CliError(problems);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pause));
  }
}

Millis left_until(Steady::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Steady::now()).count();
  return std::max<Millis>(left, 0);
}

int exit_code(const Message& reply, std::string_view success) {
  if (reply.status() == success) return kExitOk;
  return is_conflict(reply.status()) ? kExitConflict : kExitError;
}

std::string explain_failure(const Message& reply) {
  if (is_conflict(reply.status())) return describe_conflict(reply.fields());
  if (reply.status() == "error") return describe_error(reply.fields());
  return "unexpected reply from tenured: " + reply.line();
}

int report(const Globals& globals, const Message& reply, std::string_view success,
           const std::function<std::string(Fields)>& describe) {
  int code = exit_code(reply, success);
  if (globals.json) {
    std::cout << reply.line() << '\n';
  } else if (code == kExitOk) {
    std::cout << describe(reply.fields()) << '\n';
  } else if (code == kExitConflict) {
    // held and not_holder are answers, not failures of the tool: they go with the output.
    std::cout << explain_failure(reply) << '\n';
  } else {
    std::cerr << "tenure: " << explain_failure(reply) << '\n';
  }
  return code;
}

}  // namespace tenure::cli
