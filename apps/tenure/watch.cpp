#include "apps/tenure/watch.hpp"

#include <iostream>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/output.hpp"
#include "apps/tenure/requests.hpp"

namespace tenure::cli {
namespace {

// lagged and compacted end the watch; the message says how to pick up again.
std::optional<std::string> watch_ended(const Message& event) {
  if (event.event() == "lagged") {
    return "the watch fell behind and was cancelled; resume with --from " +
           std::to_string(uint_field(event.fields(), "resume_from").value_or(0));
  }
  if (event.event() == "compacted") {
    return "events before revision " +
           std::to_string(uint_field(event.fields(), "oldest_revision").value_or(0)) +
           " are no longer kept; the watch was cancelled";
  }
  return std::nullopt;
}

}  // namespace

int watch_command(const Globals& g, const std::optional<std::string>& prefix,
                  const std::optional<std::string>& key, std::optional<std::uint64_t> from) {
  Client client = connect(g);
  Message reply = client.call([&](RequestId id) { return watch_request(id, prefix, key, from); });
  if (reply.status() != "watching") return report(g, reply, "watching", nullptr);
  if (g.json) {
    std::cout << reply.line() << std::endl;
  } else {
    // On stderr, so that stdout carries nothing but events.
    std::cerr << "watching "
              << (key      ? *key
                  : prefix ? "prefix " + *prefix
                           : "all keys")
              << ", server at revision " << uint_field(reply.fields(), "revision").value_or(0)
              << '\n';
  }
  for (;;) {
    Message event = *client.receive(-1);
    if (event.event().empty()) continue;
    if (auto ended = watch_ended(event)) {
      if (g.json) std::cout << event.line() << std::endl;
      std::cerr << "tenure: " << *ended << '\n';
      return kExitError;
    }
    // Flushed per event: a watch is usually read live, often through a pipe.
    std::cout << (g.json ? event.line() : describe_event(event.fields())) << std::endl;
  }
}

}  // namespace tenure::cli
