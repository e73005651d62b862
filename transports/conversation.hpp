#pragma once
// The protocol of one client connection, apart from its framing (§2, §3, §5). Each request is
// parsed, refused if the client may not make it, and handed to the engine at once, without
// waiting for the replies before it, so a waiting acquire holds back nothing. Results come back on
// engine threads, are posted to the connection's strand, formatted, and queued as replies; watch
// events and `lost` notices are queued alike. The Unix socket and WebSocket sessions derive from
// it and differ only in framing, credentials and limits. Everything runs on the strand unless
// said otherwise.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/engine.hpp"
#include "core/handler_memory.hpp"
#include "transports/audit_log.hpp"
#include "transports/connection_keys.hpp"
#include "transports/key_routes.hpp"
#include "transports/message_format.hpp"
#include "transports/owner_names.hpp"
#include "transports/pending_request.hpp"
#include "transports/reply_format.hpp"
#include "transports/request.hpp"
#include "transports/server_context.hpp"
#include "transports/subscription.hpp"

namespace tenure {

// Who the client is (§7) and what it may do.
struct Credentials {
  Principal uid = 0;
  bool admin = false;
  // Set when the client may not mutate (WebSocket without the bearer token): the message of the
  // `unauthenticated` error its mutations get.
  std::optional<std::string> unauthenticated;
};

class Conversation : public std::enable_shared_from_this<Conversation>, public ConnectionListener {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  Transport transport() const { return transport_; }
  // Stops reading; closes once every request read so far is answered and written (shutdown).
  // Any thread.
  virtual void drain() = 0;
  // Closes now, whatever is unanswered or unwritten (a shutdown that could not drain). Any
  // thread.
  virtual void abort() = 0;
  // Any thread.
  void on_lost(std::vector<Event> events) override;
  // Any thread. This node's connection: from now on its node tells it of those leases' loss,
  // from the event log (Router). A proxy: the node of its client is asked to.
  void on_unowned(std::vector<BoundTenure> tenures) override;
  // Whether it serves a client of another node, whose requests that node forwarded here.
  virtual bool proxied() const { return false; }

 protected:
  // `pid`: the client's process when the transport knows it (the Unix socket), else 0.
  Conversation(ServerContext& context, Strand strand, Transport transport, Credentials credentials,
               pid_t pid = 0);

  // Registers the connection with the engine, once it is up.
  void open();
  // Serves one request (a line or a text frame) read off the connection at `read_at` (§4).
  void handle_request(std::string_view text, Millis read_at);
  // Queues a message unless the connection has ended. Replies and `lost` notices are never
  // dropped: the output is bounded by reading no more requests while it is over the bound (§2),
  // and a client that takes nothing at all is closed by its session's write timeout.
  void send(MessageFormat format);
  // An error reply to something that was not a request (a frame the framing refused).
  void send_error(const Error& error);
  // Ends what the connection binds: release_on_disconnect leases, waiters (§3), watches.
  void disconnect();
  // Cancels every watch of the connection, so that a closing connection's output can run dry.
  void end_watches();
  // Requests read and not yet replied to, waiting acquires and held replies included.
  std::size_t inflight() const { return quick_ + waiting_ + refusals_.size() + held_.size(); }
  // Whether the session should read no more requests for now: the replies it owes (written or
  // expected) are over the output bound, or too many quick requests are unanswered. Waiting
  // acquires do not count: they may wait long, and the renewals behind them must be read (§2).
  bool read_budget_spent() const;
  ConnId conn() const { return conn_; }
  // For the connection's Asio operations (asio::bind_allocator): any thread.
  HandlerAllocator<void> handler_allocator() { return HandlerAllocator<void>(handler_memory_); }

  // The framing's side.
  // Appends one message to the output; `event_of` is the subscription whose event it is.
  virtual void queue(MessageFormat format, const std::shared_ptr<Subscription>& event_of) = 0;
  virtual std::size_t unwritten_bytes() const = 0;
  // No more output is taken: the connection is closing or closed.
  virtual bool ended() const = 0;
  // Called after each reply: resume reading, or finish a close.
  virtual void settle() = 0;
  // While the replies of one engine turn are queued: the framing writes them together, at the
  // settle() after the last, not as each is queued.
  bool answering() const { return answering_; }

  ServerContext& context_;
  const Strand strand_;

 private:
  friend class Subscription;
  friend class Router;

  void dispatch(std::string_view id, RequestBody& body);
  // Answers a request that goes to no engine with `error` (`op`: a protocol::Op, or
  // TransportMetrics::kInvalid). Replies on one key keep request order (§2), and a refusal may
  // be of a key with requests in flight: it is held until every request read before it has been
  // answered (waiting acquires aside, which hold back nothing), and the replies to requests read
  // after it are held until it has gone. Refusals are rare, and otherwise cost nothing.
  void refuse(std::size_t op, std::string_view id, const Error& error);
  // Sends the held refusals that are due, each followed by the replies held behind it.
  void send_held();
  // Replies to an answered request and frees (or keeps) its slot.
  void finish(std::unique_ptr<PendingRequest> slot);
  // A slot for a request to `op` about to go to the engine, counted in flight until `finish`
  // has replied to it. `expect`: the bytes its reply may take, reserved against the output bound
  // until it comes; `waits`: a waiting acquire, counted apart.
  PendingRequest& pending(protocol::Op op, std::string_view id, PendingRequest::Finish finish,
                          std::size_t expect, bool waits = false);
  // Hands `request` to the engine; its result goes to `slot`.
  template <typename Request, typename Result>
  void call(void (Engine::*method)(Request, Reply<Result>), Request request, PendingRequest& slot);
  // Engine threads: queues an answered request for the strand, posting to it only when the
  // queue was empty.
  void answered(PendingRequest* slot);
  // The strand: `lost` notices, on their way to the client.
  void send_lost(const std::vector<Event>& events);
  // Replies to the answered requests, in the order they were answered, and frees their slots.
  void finish_answered();
  // The usual Finish: the result formatted as the reply.
  template <typename Result, ReplyOutcome (*format)(std::string&, std::string_view, const Result&)>
  static void reply_with(Conversation& self, PendingRequest& slot);
  // Queues a reply to `op` (a protocol::Op, or TransportMetrics::kInvalid) that `format` appends;
  // counts what it said.
  template <typename Format>
  void reply(std::size_t op, Format&& format) {
    send([&](std::string& out) { context_.metrics.count_reply(op, format(out)); });
  }
  template <typename Format>
  void reply(protocol::Op op, Format&& format) {
    reply(static_cast<std::size_t>(op), std::forward<Format>(format));
  }
  void start_watch(std::string_view id, WatchRequest& request);
  void stop_watch(std::string_view id, const UnwatchRequest& request);
  void end_watch(const std::shared_ptr<Subscription>& subscription);
  void deliver(const std::shared_ptr<Subscription>& subscription, const std::vector<Event>& events);
  void report_lag(const std::shared_ptr<Subscription>& subscription);
  void backup(std::string_view id, BackupRequest& request);
  void report_compacted(const std::shared_ptr<Subscription>& subscription, Revision oldest);
  void report_failed(const std::shared_ptr<Subscription>& subscription, Revision resume_from,
                     const std::string& message);
  Caller caller() const { return Caller{credentials_.uid, credentials_.admin, conn_, read_at_}; }
  // Writes a mutation and its outcome to the audit log, if there is one.
  void audit(const AuditSubject& subject, const AuditOutcome& outcome);
  // The principal as history and events name it (§3 revoke): the bearer token is not a uid.
  std::string principal_name() const {
    return transport_ == Transport::websocket ? "ws" : "uid:" + std::to_string(credentials_.uid);
  }

  const Transport transport_;
  const Credentials credentials_;
  const pid_t pid_;
  ConnId conn_ = 0;
  bool disconnected_ = false;
  bool answering_ = false;
  Millis read_at_ = 0;
  std::size_t quick_ = 0;     // requests in flight other than waiting acquires
  std::size_t waiting_ = 0;   // waiting acquires in flight
  std::size_t reserved_ = 0;  // reply bytes expected of the quick requests in flight
  std::uint64_t read_ = 0;    // requests handed on or refused so far; numbers them
  // Refusals held for the quick requests read before them, in the order they were read.
  struct HeldRefusal {
    std::uint64_t seq;
    std::size_t ahead;  // quick requests read before it and not answered yet
    std::size_t op;
    std::string id;
    Error error;
  };
  std::deque<HeldRefusal> refusals_;
  // Answered requests read after the first held refusal, in the order they were answered.
  std::vector<std::unique_ptr<PendingRequest>> held_;
  ConnectionKeys keys_;
  OwnerNames owner_names_;
  // Cluster mode (Router): the order of requests per key across the ways they go; the key of the
  // quick request being handed on, which pending() gives its slot; and whether the request being
  // handled comes first off its key's queue.
  KeyRoutes key_routes_;
  std::string route_key_;
  bool rerouting_ = false;
  // Slots of answered requests, kept for the next ones (a slot in flight is owned by the reply
  // that points at it, and comes back here or is deleted once finished).
  std::vector<std::unique_ptr<PendingRequest>> free_;
  std::atomic<PendingRequest*> answered_{nullptr};  // last answered first
  // Keeps the connection while the engine has requests of it: its replies point at it.
  std::shared_ptr<Conversation> keep_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Subscription>> watches_;
  HandlerMemory handler_memory_;
};

}  // namespace tenure
