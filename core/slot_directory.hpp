#pragma once
// Who owns each slot of a cluster (see core/slot.hpp): what a router asks before it runs a
// request locally or forwards it to the owner's peer address. The cluster's membership
// implements it (storage/membership.hpp); every method is safe from any thread.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tenure {

struct SlotOwner {
  bool local = false;   // this node: its engine has adopted the slot, run the request here
  std::string node_id;  // the owner's --node-id
  std::string peer;     // the owner's --peer-listen HOST:PORT (empty when local)
};

class SlotDirectory {
 public:
  using OwnerCallback = std::function<void(std::optional<SlotOwner>)>;

  virtual ~SlotDirectory() = default;
  // The slot's owner now, or nullopt while nobody holds it (a failover in progress). A local
  // owner is reported only once the slot's rows are recovered in the engine.
  virtual std::optional<SlotOwner> owner_of(std::uint32_t slot) const = 0;
  // Calls `done` once, on the membership's thread (post it to your own executor): with the
  // owner as soon as the slot has one (at once if it has), or with nullopt after `patience`.
  virtual void wait_owner(std::uint32_t slot, std::chrono::milliseconds patience,
                          OwnerCallback done) = 0;
  // This node's id, and the nodes alive now (with their peer addresses), for stats.
  virtual const std::string& node_id() const = 0;
  struct Node {
    std::string id;
    std::string peer;
  };
  virtual std::vector<Node> nodes() const = 0;
  virtual std::size_t slots_owned() const = 0;
};

}  // namespace tenure
