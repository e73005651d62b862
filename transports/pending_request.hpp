#pragma once
// A request handed to the engine and not answered yet, in a slot its connection reuses from
// request to request: the engine's reply carries only a pointer to it (small enough for
// std::function to hold without allocating), and the result waits in it for the connection's
// strand.
#include <atomic>
#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "actors/requests.hpp"
#include "protocol/ops.hpp"
#include "transports/audit_log.hpp"

namespace tenure {

class Conversation;

struct PendingRequest {
  // Writes the reply to `result`, on the strand.
  using Finish = void (*)(Conversation&, PendingRequest&);

  protocol::Op op = protocol::Op::ping;
  std::string id;  // the raw JSON of the request's id
  std::size_t expect = 0;
  bool waits = false;
  std::uint64_t seq = 0;  // the request's number on its connection, in read order
  Finish finish = nullptr;
  std::string key;  // acquire: the key it binds to the connection, if it binds one
  bool binds = false;
  bool audited = false;
  AuditSubject audit;
  std::variant<std::monostate, AcquireResult, HolderResult, GetResult, KeepaliveResult, ListResult,
               HistoryResult, BackupResult>
      result;
  // Cluster mode: a forwarded request's reply as the client gets it, or a request waiting for its
  // slot's claim and when it was read.
  std::string text;
  Millis read_at = 0;
  // Cluster mode: the key of a quick request counted in flight in the connection's KeyRoutes.
  std::string routed_key;
  // Not a request but `lost` notices (Conversation::on_lost), in the list of answered requests
  // so that they keep their place among the replies.
  std::vector<Event> notices;
  PendingRequest* next = nullptr;  // in the connection's list of answered requests
};

}  // namespace tenure
