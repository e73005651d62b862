// Each request's engine call and how its result is written back. Engine replies arrive on engine
// threads; everything here after the call runs on the connection's strand.
#include <boost/asio/post.hpp>
#include <filesystem>

#include "transports/conversation.hpp"
#include "transports/reply_format.hpp"

namespace tenure {
namespace {

template <typename... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};
template <typename... Handlers>
Overloaded(Handlers...) -> Overloaded<Handlers...>;  // clang 16 deduces no aggregates

// What a reply is expected to take, to bound the replies a connection owes (§2). Rough sizes
// suffice: they only decide how many requests are read ahead of their replies.
constexpr std::size_t kSmallReply = 512;  // a lease object with a long key, or less
constexpr std::size_t kGetReply = 4096;   // a lease and up to 100 waiters
constexpr std::size_t kLeaseInList = 300;
constexpr std::size_t kTenureInHistory = 200;

}  // namespace

template <typename Result>
auto Conversation::reply_with(std::size_t op, std::string id, Formatter<Result> format) {
  return [op, id = std::move(id), format](Conversation& self, const Result& result) {
    self.reply(op, [&](std::string& out) { return format(out, id, result); });
  };
}

template <typename Request, typename Result, typename OnResult>
void Conversation::call(void (Engine::*op)(Request, Reply<Result>), Request request,
                        OnResult on_result, std::size_t expect, bool waits) {
  if (waits) {
    ++waiting_;
    expect = 0;
  } else {
    ++quick_;
    reserved_ += expect;
  }
  request.caller = caller();
  constexpr protocol::Op kOp = request_op<Request>;
  std::optional<AuditSubject> audited;
  if (context_.audit && protocol::spec(kOp).mutates) audited = audit_subject(kOp, request);
  auto reply = [self = shared_from_this(), on_result = std::move(on_result), expect, waits,
                audited = std::move(audited)](Result result) {
    boost::asio::post(self->strand_,
                      [self, on_result, result = std::move(result), expect, waits, audited] {
                        if (waits) {
                          --self->waiting_;
                        } else {
                          --self->quick_;
                          self->reserved_ -= expect;
                        }
                        if (audited) self->audit(*audited, audit_outcome(result, kOp));
                        on_result(*self, result);
                        self->settle();
                      });
  };
  (context_.engine.*op)(std::move(request), std::move(reply));
}

void Conversation::dispatch(std::string id, RequestBody& body) {
  Engine& engine = context_.engine;
  std::size_t op = body.index();
  std::visit(
      Overloaded{
          [&](AcquireRequest& request) {
            bool waits = request.wait_ms > 0;
            if (waits && waiting_ >= context_.limits.max_waiting) {
              Error refusal{errc::too_many_requests,
                            "a connection may have at most " +
                                std::to_string(context_.limits.max_waiting) + " waiting acquires"};
              reply(op, [&](std::string& out) { return format_error(out, id, refusal); });
              return;
            }
            // Only a lease bound to the connection or a queued waiter needs the engine when the
            // connection closes; other leases are not worth a map entry per lease.
            bool binds = request.params.release_on_disconnect || waits;
            std::string key = binds ? request.key : std::string();
            if (binds) keys_.acquire_sent(key);
            call(
                &Engine::acquire, std::move(request),
                [op, id = std::move(id), key, binds](Conversation& self,
                                                     const AcquireResult& result) {
                  bool acquired = !result.error && result.status == AcquireStatus::acquired;
                  if (binds) self.keys_.acquire_answered(key, acquired);
                  self.reply(op, [&](std::string& out) { return format_acquire(out, id, result); });
                },
                kSmallReply, waits);
          },
          [&](ReleaseRequest& request) {
            call(
                &Engine::release, std::move(request),
                [op, id = std::move(id)](Conversation& self, const HolderResult& result) {
                  if (!result.error && result.status != HolderStatus::not_holder) {
                    self.keys_.lease_ended(result.key);
                  }
                  self.reply(op, [&](std::string& out) { return format_release(out, id, result); });
                },
                kSmallReply);
          },
          [&](RenewRequest& request) {
            call(&Engine::renew, std::move(request), reply_with(op, std::move(id), &format_renew),
                 kSmallReply);
          },
          [&](RevokeRequest& request) {
            request.by = principal_name();
            call(&Engine::revoke, std::move(request), reply_with(op, std::move(id), &format_revoke),
                 kSmallReply);
          },
          [&](CheckRequest& request) {
            call(&Engine::check, std::move(request), reply_with(op, std::move(id), &format_check),
                 kSmallReply);
          },
          [&](GetRequest& request) {
            call(&Engine::get, std::move(request), reply_with(op, std::move(id), &format_get),
                 kGetReply);
          },
          [&](KeepaliveRequest& request) {
            call(&Engine::keepalive, std::move(request),
                 reply_with(op, std::move(id), &format_keepalive), kSmallReply);
          },
          [&](ListRequest& request) {
            std::size_t expect = kSmallReply + request.limit * kLeaseInList;
            call(&Engine::list, std::move(request), reply_with(op, std::move(id), &format_list),
                 expect);
          },
          [&](HistoryRequest& request) {
            std::size_t expect = kSmallReply + request.limit * kTenureInHistory;
            call(&Engine::history, std::move(request),
                 reply_with(op, std::move(id), &format_history), expect);
          },
          [&](WatchRequest& request) { start_watch(std::move(id), request); },
          [&](UnwatchRequest& request) { stop_watch(std::move(id), request); },
          [&](StatsRequest&) {
            ServerStats server{TENURE_VERSION, engine.clock().now() - context_.started_at,
                               context_.registry.size(), engine.events().subscribers()};
            EngineStats stats = engine.stats();
            reply(op, [&](std::string& out) { return format_stats(out, id, server, stats); });
          },
          [&](PingRequest&) { reply(op, [&](std::string& out) { return format_pong(out, id); }); },
          [&](BackupRequest& request) { backup(std::move(id), request); },
      },
      body);
}

void Conversation::backup(std::string id, const BackupRequest& request) {
  constexpr std::size_t op = static_cast<std::size_t>(protocol::Op::backup);
  Engine& engine = context_.engine;
  Revision revision = engine.revision();
  std::optional<Error> refusal;
  if (std::error_code ec; std::filesystem::exists(request.dir, ec) || ec) {
    refusal = Error{errc::bad_request, "dir " + request.dir + " exists already"};
  } else if (storage::Status status = engine.backup(request.dir); !status.ok()) {
    // Runs on this strand: a checkpoint is a flush and hard links, quick next to its rarity.
    refusal = Error{errc::unavailable, "cannot back up the ledger: " + status.message()};
  }
  reply(op, [&](std::string& out) {
    return refusal ? format_error(out, id, *refusal)
                   : format_backup(out, id, request.dir, revision);
  });
}

void Conversation::start_watch(std::string id, WatchRequest& request) {
  constexpr std::size_t op = static_cast<std::size_t>(protocol::Op::watch);
  std::optional<Error> refusal;
  if (watches_.size() >= context_.limits.max_watches) {
    refusal = Error{errc::too_many_requests, "a connection may have at most " +
                                                 std::to_string(context_.limits.max_watches) +
                                                 " watches"};
  } else if (context_.watches.fetch_add(1) >= context_.limits.max_watches_total) {
    context_.watches.fetch_sub(1);
    refusal = Error{errc::too_many_requests, "the server has " +
                                                 std::to_string(context_.limits.max_watches_total) +
                                                 " watches, its maximum"};
  }
  if (refusal) {
    reply(op, [&](std::string& out) { return format_error(out, id, *refusal); });
    return;
  }
  auto subscription = std::make_shared<Subscription>(weak_from_this(), context_.limits.watch_queue);
  Revision current = 0;
  // Events and a `compacted` can come at once, but they are posted to this strand, so they
  // follow the `watching` reply queued below.
  subscription->watch = context_.engine.watch(WatchFilter{request.prefix, request.key},
                                              request.from_revision, subscription, current);
  std::uint64_t watch_id = subscription->watch->id();
  watches_.emplace(watch_id, std::move(subscription));
  reply(op, [&](std::string& out) { return format_watching(out, id, watch_id, current); });
}

void Conversation::stop_watch(std::string id, const UnwatchRequest& request) {
  constexpr std::size_t op = static_cast<std::size_t>(protocol::Op::unwatch);
  auto found = watches_.find(request.watch_id);
  if (found == watches_.end()) {
    Error refusal{errc::bad_request, "watch_id " + std::to_string(request.watch_id) +
                                         " is not a watch of this connection"};
    reply(op, [&](std::string& out) { return format_error(out, id, refusal); });
    return;
  }
  end_watch(std::shared_ptr<Subscription>(found->second));
  reply(op, [&](std::string& out) { return format_unwatched(out, id, request.watch_id); });
}

}  // namespace tenure
