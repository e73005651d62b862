#include "transports/router.hpp"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/slot.hpp"
#include "transports/conversation.hpp"
#include "transports/peer_wire.hpp"
#include "transports/request_parser.hpp"
#include "transports/task_failure.hpp"

namespace tenure {

namespace asio = boost::asio;

namespace {

// The bytes a forwarded reply is expected to take, against the connection's output bound: a get
// with its waiters at most.
constexpr std::size_t kForwardedReply = 4096;
// How often a held request asks whether its slot has an owner yet.
constexpr auto kClaimPoll = std::chrono::milliseconds(20);

const std::string* key_of(const RequestBody& body) {
  return std::visit(
      [](const auto& request) -> const std::string* {
        if constexpr (requires { request.key; }) {
          if constexpr (std::is_same_v<std::decay_t<decltype(request.key)>, std::string>) {
            return &request.key;
          }
        }
        return nullptr;
      },
      body);
}

Millis wait_of(const RequestBody& body) {
  const auto* acquire = std::get_if<AcquireRequest>(&body);
  return acquire != nullptr ? acquire->wait_ms : 0;
}

// A waiter binds nothing that outlives its request: a broken link answers it `unavailable`.
bool binds(const RequestBody& body) {
  const auto* acquire = std::get_if<AcquireRequest>(&body);
  return acquire != nullptr && acquire->params.release_on_disconnect;
}

void add_once(std::vector<std::string>& nodes, const std::string& node) {
  if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
}

// A peer's keepalive reply (`,"status":…}` after its link id): its count and revision, or its
// error.
std::variant<KeepaliveResult, Error> read_keepalive(std::string_view rest) {
  simdjson::padded_string json(std::string("{") + std::string(rest.substr(1)));
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  KeepaliveResult result;
  std::string_view status, message;
  if (parser.iterate(json).get(doc) || doc["status"].get_string().get(status)) {
    return Error{errc::internal, "a peer's keepalive reply is malformed"};
  }
  if (status != "renewed") {
    if (doc["message"].get_string().get(message)) message = "a peer refused the keepalive";
    return Error{errc::unavailable, std::string(message)};
  }
  std::uint64_t count = 0;
  if (doc["count"].get_uint64().get(count) || doc["revision"].get_uint64().get(result.revision)) {
    return Error{errc::internal, "a peer's keepalive reply is malformed"};
  }
  result.count = count;
  return result;
}

// A forwarded reply's (`,"status":…}` after its link id) status, and its token if it has one.
bool read_tenure(std::string_view rest, std::string_view& status, std::uint64_t& token) {
  if (rest.empty()) return false;
  thread_local simdjson::ondemand::parser parser;
  simdjson::padded_string padded(std::string("{").append(rest.substr(1)));
  simdjson::ondemand::document doc;
  std::string_view said;
  if (parser.iterate(padded).get(doc) || doc["status"].get_string().get(said)) return false;
  status = said == "acquired" ? "acquired" : said == "released" ? "released" : "";
  return !status.empty() && !doc["token"].get_uint64().get(token);
}

// A `lost` notice's key and token.
bool read_lost(std::string_view message, std::string& key, std::uint64_t& token) {
  if (message.rfind(R"({"event":"lost")", 0) != 0) return false;
  thread_local simdjson::ondemand::parser parser;
  simdjson::padded_string padded(message);
  simdjson::ondemand::document doc;
  std::string_view said;
  if (parser.iterate(padded).get(doc) || doc["key"].get_string().get(said)) return false;
  key.assign(said);
  return !doc["token"].get_uint64().get(token);
}

// The parts of a keepalive sent to every node, summed as they come back on any thread.
struct Fanout {
  std::shared_ptr<Conversation> conversation;
  PendingRequest* slot = nullptr;
  std::mutex mutex;
  std::size_t remaining = 0;
  KeepaliveResult sum;
  std::optional<Error> error;
};

}  // namespace

Router::Router(asio::io_context& io, ServerContext& context, const ClusterView& cluster,
               PeerLimits limits)
    : io_(io),
      context_(context),
      cluster_(cluster),
      limits_(limits),
      forwarded_leases_(std::make_shared<ForwardedLeases>(
          context.engine.events(),
          [this](ConnId conn, Event event) { tell_lost(conn, std::move(event)); })) {
  forwarded_leases_->follow();
}

Router::~Router() { stop(); }

void Router::stop() {
  std::unordered_map<std::string, std::shared_ptr<PeerClient>> links;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    links.swap(links_);
  }
  // Unlocked: a link's strand may be waiting for the mutex (deliver) while stop waits for it.
  for (auto& [node, link] : links) link->stop();
  forwarded_leases_->stop();
}

std::shared_ptr<PeerClient> Router::link(const std::string& node) {
  std::lock_guard lock(mutex_);
  auto found = links_.find(node);
  if (found != links_.end()) return found->second;
  auto made = std::make_shared<PeerClient>(
      io_, cluster_, node, limits_,
      [this](ConnId conn, std::string message) { deliver(conn, std::move(message)); },
      [this, node] { link_broken(node); });
  if (stopped_) {
    made->refuse_all();
  } else {
    made->start();
  }
  links_.emplace(node, made);
  return made;
}

Via Router::via_of(const Conversation& from) const {
  return Via{cluster_.node_id(), from.conn(), from.credentials_.uid, from.credentials_.admin};
}

bool Router::route(Conversation& from, std::string_view id, RequestBody& body,
                   std::string_view line, Millis read_at) {
  protocol::Op op = op_of(body);
  const std::string* key = key_of(body);
  if (key == nullptr) {
    auto* request = std::get_if<KeepaliveRequest>(&body);
    if (request == nullptr || from.proxied()) return false;
    keepalive(from, id, *request, line);
    return true;
  }
  std::uint32_t slot = slot_of(*key);
  std::string owner = cluster_.owner(slot);
  if (from.proxied()) {
    if (owner == cluster_.node_id()) return false;
    refuse(from, id, op,
           Error{errc::unavailable, "node " + cluster_.node_id() + " no longer serves slot " +
                                        std::to_string(slot) + " of this key; retry"});
    return true;
  }
  KeyRoute& route = from.key_routes_[*key];
  bool first = std::exchange(from.rerouting_, false);
  if (first) route.releasing = false;
  bool waits = wait_of(body) > 0;
  if (owner.empty() || (route.inflight > 0 && route.way != owner) ||
      (!first && (!route.queue.empty() || route.releasing))) {
    enqueue(from, *key, route, id, op, wait_of(body), line, read_at, first);
    return true;
  }
  if (!waits) {
    route.way = owner;
    ++route.inflight;
    from.route_key_ = *key;  // pending() gives it to the request's slot
  }
  if (first) {
    advance(from, *key);  // the next queued may go the same way at once
  } else if (route.idle()) {
    from.key_routes_.erase(*key);  // a waiting acquire, which holds back nothing
  }
  if (owner == cluster_.node_id()) return false;
  forward(from, owner, *key, id, op, wait_of(body), binds(body), line);
  return true;
}

void Router::enqueue(Conversation& from, const std::string& key, KeyRoute& route,
                     std::string_view id, protocol::Op op, Millis wait_ms, std::string_view line,
                     Millis read_at, bool first) {
  PendingRequest& slot = from.pending(op, id, &finish_rerouted, kForwardedReply, wait_ms > 0);
  slot.text.assign(line);
  slot.read_at = read_at;
  KeyRoute::Queued queued{&slot, Steady::now() + cluster_.claim_wait()};
  if (first) {
    route.queue.push_front(queued);
  } else {
    route.queue.push_back(queued);
  }
  advance(from, key);
}

void Router::advance(Conversation& from, const std::string& key) {
  auto found = from.key_routes_.find(key);
  if (found == from.key_routes_.end()) return;
  KeyRoute& route = found->second;
  if (route.releasing || route.polling) return;
  if (route.queue.empty()) {
    if (route.idle()) from.key_routes_.erase(found);
    return;
  }
  std::string owner = cluster_.owner(slot_of(key));
  if (owner.empty()) {
    route.polling = true;
    wait_for_claim(from, key);
    return;
  }
  if (route.inflight > 0 && route.way != owner) return;  // request_done comes back here
  PendingRequest* next = route.queue.front().slot;
  route.queue.pop_front();
  route.releasing = true;
  from.answered(next);  // finish_rerouted hands it on, as the queue's first
}

void Router::wait_for_claim(Conversation& from, const std::string& key) {
  auto wait = [](Router& router, std::shared_ptr<Conversation> self,
                 std::string key) -> asio::awaitable<void> {
    asio::steady_timer timer(self->strand_);
    std::uint32_t slot_number = slot_of(key);
    for (;;) {
      timer.expires_after(kClaimPoll);
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      KeyRoute& route = self->key_routes_[key];
      if (route.queue.empty() || !router.cluster_.owner(slot_number).empty()) break;
      // Nothing in flight on the key answers after it: the first may be refused in its place.
      while (route.inflight == 0 && !route.queue.empty() &&
             Steady::now() >= route.queue.front().claim_deadline) {
        PendingRequest& slot = *route.queue.front().slot;
        route.queue.pop_front();
        slot.text.clear();
        format_error(slot.text, slot.id,
                     Error{errc::unavailable, "no node serves slot " + std::to_string(slot_number) +
                                                  " of this key yet (a failover is in progress); "
                                                  "retry"});
        slot.finish = &finish_text;
        self->answered(&slot);
      }
    }
    self->key_routes_[key].polling = false;
    router.advance(*self, key);
  };
  asio::co_spawn(from.strand_, wait(*this, from.shared_from_this(), key),
                 LogTaskFailure("request waiting for its slot's claim"));
}

void Router::unowned(Conversation& from, const std::vector<BoundTenure>& tenures) {
  {
    std::lock_guard lock(mutex_);
    forwarders_[from.conn()].conversation = from.weak_from_this();  // tell_lost finds it there
  }
  for (const BoundTenure& tenure : tenures) {
    forwarded_leases_->unowned(tenure.key, tenure.token, from.conn(), /*granted_here=*/true);
  }
}

void Router::request_done(Conversation& from, const std::string& key) {
  auto found = from.key_routes_.find(key);
  if (found == from.key_routes_.end()) return;
  --found->second.inflight;
  advance(from, key);
}

void Router::refuse(Conversation& from, std::string_view id, protocol::Op op, const Error& error) {
  from.refuse(static_cast<std::size_t>(op), id, error);
}

void Router::forward(Conversation& from, const std::string& node, const std::string& key,
                     std::string_view id, protocol::Op op, Millis wait_ms, bool binds,
                     std::string_view line) {
  std::uint64_t link_id = next_link_id_.fetch_add(1, std::memory_order_relaxed);
  std::string out;
  format_forwarded(out, via_of(from), link_id, line, thread_request_parser().id_span());
  PendingRequest& slot = from.pending(op, id, &finish_text, kForwardedReply, wait_ms > 0);
  remember(from, node, binds);
  auto deadline = Steady::now() + cluster_.claim_wait() + std::chrono::milliseconds(wait_ms);
  link(node)->send(link_id, std::move(out), deadline,
                   [this, self = from.shared_from_this(), &slot, op, key, node](
                       std::string_view rest, const Error* error) {
                     if (error != nullptr) {
                       format_error(slot.text, slot.id, *error);
                     } else {
                       note_reply(op, key, self->conn(), node, rest);
                       restore_reply(slot.text, slot.id, rest);
                     }
                     self->answered(&slot);
                   });
}

void Router::note_reply(protocol::Op op, const std::string& key, ConnId conn,
                        const std::string& node, std::string_view rest) {
  if (op != protocol::Op::acquire && op != protocol::Op::release) return;
  std::string_view status;
  std::uint64_t token = 0;
  if (!read_tenure(rest, status, token)) return;
  if (op == protocol::Op::acquire && status == "acquired") {
    forwarded_leases_->granted(key, token, conn, node);
  } else if (op == protocol::Op::release && status == "released") {
    forwarded_leases_->ended(key, token);
  }
}

std::shared_ptr<Conversation> Router::conversation_of(ConnId conn) {
  std::lock_guard lock(mutex_);
  auto found = forwarders_.find(conn);
  return found != forwarders_.end() ? found->second.conversation.lock() : nullptr;
}

void Router::tell_lost(ConnId conn, Event event) {
  std::shared_ptr<Conversation> to = conversation_of(conn);
  if (!to) return;  // gone: its leases end with it
  std::vector<Event> lost;
  lost.push_back(std::move(event));
  to->on_lost(std::move(lost));
}

void Router::finish_text(Conversation& self, PendingRequest& slot) {
  self.send([&](std::string& out) { out.append(slot.text); });
  slot.text.clear();
}

void Router::finish_rerouted(Conversation& self, PendingRequest& slot) {
  std::string line = std::move(slot.text);
  slot.text.clear();
  self.rerouting_ = true;
  self.handle_request(line, slot.read_at);
  self.rerouting_ = false;
}

void Router::keepalive(Conversation& from, std::string_view id, KeepaliveRequest& request,
                       std::string_view line) {
  auto fanout = std::make_shared<Fanout>();
  fanout->conversation = from.shared_from_this();
  fanout->slot = &from.pending(protocol::Op::keepalive, id, &finish_text, kForwardedReply);
  std::vector<std::string> peers;
  for (auto& node : cluster_.nodes()) {
    if (node.id != cluster_.node_id()) peers.push_back(std::move(node.id));
  }
  fanout->remaining = peers.size() + 1;
  // Every part adds to the sum; the last one replies.
  auto add = [](const std::shared_ptr<Fanout>& fanout, std::variant<KeepaliveResult, Error> part) {
    std::lock_guard lock(fanout->mutex);
    if (auto* error = std::get_if<Error>(&part)) {
      if (!fanout->error) fanout->error = std::move(*error);
    } else {
      auto& result = std::get<KeepaliveResult>(part);
      fanout->sum.count += result.count;
      fanout->sum.revision = std::max(fanout->sum.revision, result.revision);
    }
    if (--fanout->remaining > 0) return;
    PendingRequest& slot = *fanout->slot;
    if (fanout->error) {
      format_error(slot.text, slot.id, *fanout->error);
    } else {
      format_keepalive(slot.text, slot.id, fanout->sum);
    }
    fanout->conversation->answered(&slot);
  };
  auto deadline = Steady::now() + cluster_.claim_wait();
  for (const auto& node : peers) {
    std::uint64_t link_id = next_link_id_.fetch_add(1, std::memory_order_relaxed);
    std::string out;
    format_forwarded(out, via_of(from), link_id, line, thread_request_parser().id_span());
    remember(from, node, false);
    link(node)->send(link_id, std::move(out), deadline,
                     [fanout, add](std::string_view rest, const Error* error) {
                       if (error != nullptr) return add(fanout, *error);
                       add(fanout, read_keepalive(rest));
                     });
  }
  KeepaliveRequest local = request;
  local.caller = from.caller();
  context_.engine.keepalive(std::move(local), [fanout, add](KeepaliveResult result) {
    if (result.error) return add(fanout, *result.error);
    add(fanout, result);
  });
}

void Router::remember(Conversation& from, const std::string& node, bool binds) {
  std::lock_guard lock(mutex_);
  Forwarder& forwarder = forwarders_[from.conn()];
  if (forwarder.nodes.empty()) forwarder.conversation = from.weak_from_this();
  add_once(forwarder.nodes, node);
  if (binds) add_once(forwarder.bound, node);
}

void Router::link_broken(const std::string& node) {
  forwarded_leases_->orphan(node);
  std::vector<std::shared_ptr<Conversation>> bound;
  {
    std::lock_guard lock(mutex_);
    for (auto& [conn, forwarder] : forwarders_) {
      if (std::find(forwarder.bound.begin(), forwarder.bound.end(), node) == forwarder.bound.end())
        continue;
      if (auto conversation = forwarder.conversation.lock())
        bound.push_back(std::move(conversation));
    }
  }
  if (bound.empty()) return;
  spdlog::warn(
      "closing {} connections whose connection-bound leases were on node {}, whose link broke",
      bound.size(), node);
  for (auto& conversation : bound) conversation->abort();
}

void Router::disconnect(Conversation& from) {
  std::vector<std::string> nodes;
  {
    std::lock_guard lock(mutex_);
    auto found = forwarders_.find(from.conn());
    if (found == forwarders_.end()) return;
    nodes = std::move(found->second.nodes);
    forwarders_.erase(found);
  }
  forwarded_leases_->disconnected(from.conn());
  std::string line;
  format_peer_disconnect(line, via_of(from));
  for (const auto& node : nodes) link(node)->send(0, line, {}, nullptr);
}

void Router::deliver(ConnId conn, std::string message) {
  std::string key;
  std::uint64_t token = 0;
  if (auto notice = parse_peer_notice(message, key, token)) {
    if (*notice == PeerNotice::moved) {
      forwarded_leases_->moved(key, token, conn);
    } else {
      forwarded_leases_->unowned(key, token, conn, /*granted_here=*/false);
    }
    return;
  }
  if (read_lost(message, key, token)) forwarded_leases_->ended(key, token);
  std::shared_ptr<Conversation> to = conversation_of(conn);
  if (!to) return;  // gone: its leases end with it
  asio::post(to->strand_, [to, message = std::move(message)] {
    to->send([&](std::string& out) { out.append(message); });
  });
}

}  // namespace tenure
