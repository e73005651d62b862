#include "transports/conversation.hpp"

#include <boost/asio/post.hpp>

#include "transports/peer_wire.hpp"
#include "transports/reply_format.hpp"
#include "transports/request_parser.hpp"
#include "transports/router.hpp"

namespace tenure {

Conversation::Conversation(ServerContext& context, Strand strand, Transport transport,
                           Credentials credentials, pid_t pid)
    : context_(context),
      strand_(std::move(strand)),
      transport_(transport),
      credentials_(std::move(credentials)),
      pid_(pid) {}

void Conversation::audit(const AuditSubject& subject, const AuditOutcome& outcome) {
  context_.audit->record(context_.engine.clock().now(),
                         AuditCaller{principal_name(), credentials_.uid, pid_}, subject, outcome);
}

void Conversation::open() { conn_ = context_.engine.connect(weak_from_this()); }

// Queued with the replies, in the order the engine made them: a reply that follows from the loss
// (a renew answered not_holder) never reaches the client before its notice.
void Conversation::on_lost(std::vector<Event> events) {
  if (events.empty()) return;
  auto notice = std::make_unique<PendingRequest>();
  notice->notices = std::move(events);
  answered(notice.release());
}

void Conversation::on_unowned(std::vector<BoundTenure> tenures) {
  if (context_.router == nullptr) return;
  boost::asio::post(strand_, [self = shared_from_this(), tenures = std::move(tenures)] {
    if (self->disconnected_) return;  // its leases ended with it, or are ended by its node
    if (!self->proxied()) return self->context_.router->unowned(*self, tenures);
    for (const BoundTenure& tenure : tenures) {
      self->send([&](std::string& out) {
        format_peer_notice(out, PeerNotice::unowned, tenure.key, tenure.token);
      });
    }
  });
}

void Conversation::send_lost(const std::vector<Event>& events) {
  for (const Event& event : events) {
    keys_.lease_ended(event.key);
    // Re-acquired on another connection: nothing is lost, but a proxy's node must stop watching
    // for the loss on its client's behalf.
    if (event.type == EventType::renewed) {
      if (proxied()) {
        send([&](std::string& out) {
          format_peer_notice(out, PeerNotice::moved, event.key, event.token);
        });
      }
      continue;
    }
    send([&](std::string& out) { format_lost(out, event); });
  }
}

void Conversation::handle_request(std::string_view text, Millis read_at) {
  read_at_ = read_at;
  ParsedRequest parsed = thread_request_parser().parse(text, &owner_names_);
  if (auto* error = std::get_if<Error>(&parsed.body)) {
    refuse(TransportMetrics::kInvalid, parsed.id, *error);
    return;
  }
  RequestBody& body = std::get<RequestBody>(parsed.body);
  const protocol::OpSpec& op = protocol::spec(op_of(body));
  std::optional<Error> refusal;
  if (credentials_.unauthenticated && op.mutates) {
    refusal = Error{errc::unauthenticated, *credentials_.unauthenticated};
  } else if (op.admin_only && !credentials_.admin) {
    refusal = Error{errc::forbidden, std::string(op.name) + " is for admin principals only"};
  }
  if (refusal) {
    refuse(body.index(), parsed.id, *refusal);
    return;
  }
  if (context_.router != nullptr && context_.router->route(*this, parsed.id, body, text, read_at)) {
    return;
  }
  dispatch(parsed.id, body);
}

void Conversation::send(MessageFormat format) {
  if (ended()) return;
  queue(format, nullptr);
}

// One request is always let in, however big its reply may be, so nothing ever waits forever.
bool Conversation::read_budget_spent() const {
  return quick_ + refusals_.size() + held_.size() >= context_.limits.max_inflight ||
         unwritten_bytes() + reserved_ > context_.limits.max_output;
}

void Conversation::send_error(const Error& error) {
  reply(TransportMetrics::kInvalid, [&](std::string& out) { return format_error(out, {}, error); });
}

void Conversation::disconnect() {
  if (disconnected_) return;
  disconnected_ = true;
  end_watches();
  if (context_.router != nullptr) context_.router->disconnect(*this);
  if (conn_ != 0) context_.engine.disconnect(conn_, keys_.take());
}

void Conversation::end_watches() {
  for (auto& entry : watches_) {
    entry.second->ended = true;
    context_.engine.unwatch(entry.second->watch);
  }
  context_.watches.fetch_sub(watches_.size());
  watches_.clear();
}

void Conversation::end_watch(const std::shared_ptr<Subscription>& subscription) {
  subscription->ended = true;
  context_.engine.unwatch(subscription->watch);
  context_.watches.fetch_sub(watches_.erase(subscription->watch->id()));
}

// Events count as lag, not as a client that stopped reading: past the output bound the watch is
// cut off and told so, and the connection stays.
void Conversation::deliver(const std::shared_ptr<Subscription>& subscription,
                           const std::vector<Event>& events) {
  if (subscription->ended || ended()) return;
  TransportMetrics& metrics = context_.metrics;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& event = events[i];
    if (unwritten_bytes() > context_.limits.max_output) subscription->cut_at(event.revision);
    if (event.revision >= subscription->cutoff()) {
      metrics.events_dropped.fetch_add(events.size() - i, std::memory_order_relaxed);
      report_lag(subscription);
      return;
    }
    queue([&](std::string& out) { format_event(out, subscription->watch->id(), event); },
          subscription);
    metrics.events_sent.fetch_add(1, std::memory_order_relaxed);
  }
}

void Conversation::report_lag(const std::shared_ptr<Subscription>& subscription) {
  if (subscription->ended) return;
  end_watch(subscription);
  context_.metrics.watches_lagged.fetch_add(1, std::memory_order_relaxed);
  if (ended()) return;
  // Past the output bound too: the notice is one short line per watch, and without it the client
  // could not tell where to resume.
  queue(
      [&](std::string& out) {
        format_lagged(out, subscription->watch->id(), subscription->cutoff());
      },
      nullptr);
}

void Conversation::report_compacted(const std::shared_ptr<Subscription>& subscription,
                                    Revision oldest) {
  if (subscription->ended) return;
  end_watch(subscription);
  if (ended()) return;
  queue([&](std::string& out) { format_compacted(out, subscription->watch->id(), oldest); },
        nullptr);
}

void Conversation::report_failed(const std::shared_ptr<Subscription>& subscription,
                                 Revision resume_from, const std::string& message) {
  if (subscription->ended) return;
  end_watch(subscription);
  if (ended()) return;
  queue(
      [&](std::string& out) {
        format_watch_failed(out, subscription->watch->id(), resume_from, message);
      },
      nullptr);
}

}  // namespace tenure
