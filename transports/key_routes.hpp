#pragma once
// Cluster mode: one connection's requests on each key, across the ways a request can go (the
// local engine, the link to one other node, or a wait for the slot's claim). Each way keeps the
// order of what it is given but not against the others, and the view of who owns a slot changes
// while a pipeline is read: so a request on a key waits its turn here while the key's requests in
// flight went another way, and nothing on the key overtakes one that waits (§2). Kept by the
// Router, on the connection's strand only.
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

namespace tenure {

struct PendingRequest;

struct KeyRoute {
  struct Queued {
    PendingRequest* slot;  // the request's line in `text`, finished by handing it on again
    std::chrono::steady_clock::time_point claim_deadline;
  };

  std::string way;             // the node its quick requests in flight went to (this one: local)
  std::uint32_t inflight = 0;  // those requests (waiting acquires hold back nothing: not counted)
  std::deque<Queued> queue;    // requests waiting for their turn, in the order they were read
  bool releasing = false;      // the first queued request was let go and is not handed on yet
  bool polling = false;        // a task asks for the slot's claim on behalf of the first queued

  bool idle() const { return inflight == 0 && queue.empty() && !releasing && !polling; }
};

using KeyRoutes = std::unordered_map<std::string, KeyRoute>;

}  // namespace tenure
