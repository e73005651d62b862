#pragma once
// The keys on which a connection may hold a lease bound to it or wait in a queue: what the engine
// must look at when the connection closes (release_on_disconnect, waiters). An entry goes as soon
// as nothing binds it, so a long-lived connection cycling through many keys stays small.
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace tenure {

class ConnectionKeys {
 public:
  void acquire_sent(const std::string& key);
  void acquire_answered(const std::string& key, bool acquired);
  // The lease on `key` ended: released on this connection, or lost.
  void lease_ended(const std::string& key);
  std::vector<std::string> take();

 private:
  struct Use {
    std::uint32_t pending = 0;  // acquires not yet answered (they may be waiting)
    bool bound = false;         // the last answer granted a lease to this connection
  };
  // Open addressing: an entry comes and goes with each lock cycle, and a node-based map would
  // allocate for each.
  using Map = boost::unordered_flat_map<std::string, Use>;
  void forget_if_unused(Map::iterator it);

  Map keys_;
};

}  // namespace tenure
