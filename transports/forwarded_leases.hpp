#pragma once
// Cluster mode: the leases this node's clients took through other nodes, so that a holder still
// hears of its lease's loss (§3 `lost`) when the node that granted it cannot tell it any more:
// the node died or stalled (another one took its slots over, with the lease), or the link to it
// broke (which ended the proxies it notified through), or it let the lease's slot go. Until then
// that node sends `lost` itself, and a lease it reported lost, or its holder released, is
// forgotten here. The leases this node's own engine granted join when it lets their slot go.
// Every node sees every node's events in revision order (docs/cluster.md), so an orphaned lease's
// end is found in them; the latest ends are kept, for a lease whose end came before its orphaning
// (a node back from a pause reads the events it missed before it finds its slots gone).
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/event_bus.hpp"
#include "core/lease.hpp"

namespace tenure {

class ForwardedLeases : public EventSubscriber,
                        public std::enable_shared_from_this<ForwardedLeases> {
 public:
  // `tell`: a lost lease's notice for the connection `conn`, called on the bus's thread or in
  // orphan(), under this object's lock (so that none is called once stop() returned): it must
  // not call back here.
  ForwardedLeases(EventBus& bus, std::function<void(ConnId conn, Event lost)> tell);

  // Node `node` granted tenure `token` of `key` to the connection `conn` (also a re-acquire:
  // it notifies the connection from now on).
  void granted(const std::string& key, Token token, ConnId conn, const std::string& node);
  // The tenure ended, and its holder heard of it (a release's reply, a lost notice passed on).
  void ended(const std::string& key, Token token);
  // The tenure was re-acquired on a connection other than `conn`, which its node tells from now
  // on: `conn` is not told of its loss from here either.
  void moved(const std::string& key, Token token, ConnId conn);
  void disconnected(ConnId conn);
  // The link to `node` broke, or the node left: from now on its leases' ends are told from here.
  void orphan(const std::string& node);
  // The node that granted tenure `token` of `key` to `conn` let its slot go: from now on its end
  // is told from here, at once if it has ended. `granted_here`: this node's engine granted it
  // (nothing follows it here yet); else a node it was forwarded to, whose lease is followed
  // since its grant, or was told already.
  void unowned(const std::string& key, Token token, ConnId conn, bool granted_here);
  // Follows the events from now on, so that the latest ends are known.
  void follow();
  // Stops following the events; REQUIRES: once, before the bus goes.
  void stop();

  void on_events(const EventBatch& events) override;
  void on_gap(Revision resume_from) override;

 private:
  struct Held {
    Token token = 0;
    ConnId conn = 0;
    std::string node;
    bool orphaned = false;
    std::optional<Event> end;  // seen in the events while its node could still tell it
  };
  // Forgets tenure `token` of `key`, for connection `conn` only unless it is 0.
  void forget(const std::string& key, Token token, ConnId conn);
  // REQUIRES: mutex_ held. The latest ends: keeps `event`, and forgets the oldest past the bound.
  void remember_end(const Event& event);
  // REQUIRES: mutex_ held. Subscribes once the lock is let go, unless subscribed (`subscribe`).
  bool take_subscription();
  // REQUIRES: mutex_ held. Forgets the entry `at` of `key`'s list.
  void erase(const std::string& key, std::vector<Held>& held, std::size_t at);

  EventBus& bus_;
  const std::function<void(ConnId, Event)> tell_;
  std::mutex mutex_;
  bool subscribed_ = false;
  bool stopped_ = false;
  std::unordered_map<std::string, std::vector<Held>> by_key_;
  std::unordered_map<ConnId, std::vector<std::string>> keys_of_conn_;
  std::unordered_map<std::string, std::vector<Event>> recent_ends_;  // by key, oldest first
  std::deque<std::string> recent_order_;  // the keys of recent_ends_' events, oldest first
};

}  // namespace tenure
