#pragma once
// Cluster mode: sends each request naming a key to the node that serves the key's slot
// (docs/cluster.md). Served here: the local engine, as in single-node mode. Served by another
// node: forwarded over the peer link, and the owner's reply passed back with the client's own id.
// Served by nobody (a failover in progress): held until a node claims the slot, for at most the
// cluster's claim wait, then `unavailable`. `keepalive` goes to every node, counts summed. A
// proxied connection (a client of another node) is never forwarded again: a key that moved is
// `unavailable` to it, and its node retries with the new owner when its client does. A request
// on a key waits its turn while the connection's requests on that key went another way
// (KeyRoutes), so that replies on one key keep request order while the slot moves (§2).
// Without a cluster there is no router, and a conversation pays one null check for it.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/engine.hpp"
#include "core/cluster_view.hpp"
#include "transports/forwarded_leases.hpp"
#include "transports/key_routes.hpp"
#include "transports/peer_client.hpp"
#include "transports/peer_wire.hpp"
#include "transports/request.hpp"

namespace tenure {

class Conversation;
struct PendingRequest;
struct ServerContext;

class Router {
 public:
  Router(boost::asio::io_context& io, ServerContext& context, const ClusterView& cluster,
         PeerLimits limits = {});
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Closes the peer links; requests in flight on them are answered `unavailable`. Blocks: call
  // it from outside the io threads.
  void stop();

  // The conversation's strand, after the request passed its checks. True when the router took
  // the request (forwarded, held for a claim, or refused); false: the local engine serves it.
  bool route(Conversation& from, std::string_view id, RequestBody& body, std::string_view line,
             Millis read_at);
  // The conversation's strand: its connection ended; the nodes it forwarded to are told.
  void disconnect(Conversation& from);
  // The conversation's strand: the slot of these tenures bound to its connection went to
  // another node, which does not know the connection; they are told from the event log.
  void unowned(Conversation& from, const std::vector<BoundTenure>& tenures);
  // The conversation's strand: a quick request on `key` that went the key's way was answered.
  void request_done(Conversation& from, const std::string& key);

 private:
  using Steady = std::chrono::steady_clock;

  std::shared_ptr<PeerClient> link(const std::string& node);
  // `binds`: an acquire that binds its lease to the connection (release_on_disconnect).
  void forward(Conversation& from, const std::string& node, const std::string& key,
               std::string_view id, protocol::Op op, Millis wait_ms, bool binds,
               std::string_view line);
  // A PeerClient's strand: what a forwarded reply says of a lease's tenure (ForwardedLeases).
  void note_reply(protocol::Op op, const std::string& key, ConnId conn, const std::string& node,
                  std::string_view rest);
  std::shared_ptr<Conversation> conversation_of(ConnId conn);
  // The bus's thread: an orphaned lease `event` ended, for the connection `conn`.
  void tell_lost(ConnId conn, Event event);
  // The conversation's strand. Queues a request on `key` behind the key's requests in flight
  // another way, or until its slot has an owner (`first`: it was first in the queue already).
  void enqueue(Conversation& from, const std::string& key, KeyRoute& route, std::string_view id,
               protocol::Op op, Millis wait_ms, std::string_view line, Millis read_at, bool first);
  // Lets the first queued request on `key` go once it may, or waits for its slot's claim.
  void advance(Conversation& from, const std::string& key);
  // Asks every kClaimPoll whether `key`'s slot has an owner; past its claim wait, the first
  // queued request is answered `unavailable`.
  void wait_for_claim(Conversation& from, const std::string& key);
  void keepalive(Conversation& from, std::string_view id, KeepaliveRequest& request,
                 std::string_view line);
  void refuse(Conversation& from, std::string_view id, protocol::Op op, const Error& error);
  // Finishes (PendingRequest::Finish): the reply made in `text`; the queued request in `text`
  // handed on, now that its turn has come.
  static void finish_text(Conversation& self, PendingRequest& slot);
  static void finish_rerouted(Conversation& self, PendingRequest& slot);
  // A PeerClient's strand: a notice for this node's connection `conn`.
  void deliver(ConnId conn, std::string message);
  Via via_of(const Conversation& from) const;
  // Adds `node` to the nodes `from`'s connection forwarded to (and bound something on).
  void remember(Conversation& from, const std::string& node, bool binds);
  // A PeerClient's strand: the link to `node` broke, or the node left the cluster, and with it
  // (the owner ends a broken link's proxies; a new owner releases a lost node's) the leases bound
  // to the connections that forwarded there. Those connections are closed, so that their clients
  // learn it, as they would of a daemon gone. (Their waiters are answered `unavailable`.)
  void link_broken(const std::string& node);

  boost::asio::io_context& io_;
  ServerContext& context_;
  const ClusterView& cluster_;
  const PeerLimits limits_;
  std::atomic<std::uint64_t> next_link_id_{1};

  std::mutex mutex_;
  bool stopped_ = false;
  std::unordered_map<std::string, std::shared_ptr<PeerClient>> links_;
  struct Forwarder {
    std::weak_ptr<Conversation> conversation;
    std::vector<std::string> nodes;
    std::vector<std::string> bound;  // of `nodes`, those it bound leases on
  };
  std::unordered_map<ConnId, Forwarder> forwarders_;
  std::shared_ptr<ForwardedLeases> forwarded_leases_;
};

}  // namespace tenure
