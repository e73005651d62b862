// Each request's engine call and how its result is written back. Engine replies arrive on engine
// threads; everything here after the call runs on the connection's strand.
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/defer.hpp>
#include <filesystem>
#include <type_traits>

#include "transports/conversation.hpp"
#include "transports/reply_format.hpp"
#include "transports/router.hpp"

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

// Request slots a connection keeps between requests, and the longest id a kept one holds.
constexpr std::size_t kKeptSlots = 128;
constexpr std::size_t kKeptIdCapacity = 256;

}  // namespace

PendingRequest& Conversation::pending(protocol::Op op, std::string_view id,
                                      PendingRequest::Finish finish, std::size_t expect,
                                      bool waits) {
  if (inflight() == 0) keep_ = shared_from_this();
  if (waits) {
    ++waiting_;
    expect = 0;
  } else {
    ++quick_;
    reserved_ += expect;
  }
  if (free_.empty()) free_.push_back(std::make_unique<PendingRequest>());
  PendingRequest& slot = *free_.back().release();
  free_.pop_back();
  slot.op = op;
  slot.id.assign(id);
  slot.expect = expect;
  slot.waits = waits;
  slot.seq = ++read_;
  slot.finish = finish;
  slot.binds = false;
  slot.audited = false;
  slot.routed_key.swap(route_key_);
  route_key_.clear();
  return slot;
}

template <typename Request, typename Result>
void Conversation::call(void (Engine::*method)(Request, Reply<Result>), Request request,
                        PendingRequest& slot) {
  request.caller = caller();
  if (context_.audit && protocol::spec(slot.op).mutates) {
    slot.audited = true;
    audit_subject(slot.op, request, slot.audit);
  }
  // Two pointers: std::function keeps them in place, where a shared_ptr would cost an allocation.
  // `keep_` holds the connection until the slot is finished.
  auto reply = [self = this, &slot](Result result) {
    slot.result.template emplace<Result>(std::move(result));
    self->answered(&slot);
  };
  static_assert(std::is_trivially_copyable_v<decltype(reply)> &&
                sizeof(reply) <= 2 * sizeof(void*));
  (context_.engine.*method)(std::move(request), std::move(reply));
}

void Conversation::answered(PendingRequest* slot) {
  PendingRequest* head = answered_.load(std::memory_order_relaxed);
  do {
    slot->next = head;
  } while (!answered_.compare_exchange_weak(head, slot, std::memory_order_release,
                                            std::memory_order_relaxed));
  // A non-empty list has a post on its way, which will take this slot too.
  // Deferred: from an io thread (a shard's turn) the replies are written by that thread once the
  // turn ends, without waking another.
  if (head == nullptr) {
    boost::asio::defer(
        strand_, boost::asio::bind_allocator(handler_allocator(), [self = shared_from_this()] {
          self->finish_answered();
        }));
  }
}

void Conversation::finish_answered() {
  PendingRequest* last = answered_.exchange(nullptr, std::memory_order_acquire);
  PendingRequest* first = nullptr;
  while (last != nullptr) {
    PendingRequest* next = last->next;
    last->next = first;
    first = last;
    last = next;
  }
  answering_ = true;
  while (first != nullptr) {
    std::unique_ptr<PendingRequest> slot(first);
    first = slot->next;
    if (!slot->notices.empty()) {
      send_lost(slot->notices);
      continue;
    }
    if (slot->waits) {
      --waiting_;
    } else {
      --quick_;
      reserved_ -= slot->expect;
      for (HeldRefusal& refusal : refusals_) {
        if (slot->seq < refusal.seq) --refusal.ahead;
      }
    }
    if (!refusals_.empty() && slot->seq > refusals_.front().seq) {
      held_.push_back(std::move(slot));
    } else {
      finish(std::move(slot));
    }
  }
  if (!refusals_.empty()) send_held();
  answering_ = false;
  if (inflight() == 0) keep_.reset();  // the post's own reference keeps it until the end here
  settle();
}

void Conversation::finish(std::unique_ptr<PendingRequest> slot) {
  if (slot->audited) {
    std::visit(
        [&](const auto& result) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(result)>, std::monostate>) {
            audit(slot->audit, audit_outcome(result, slot->op));
          }
        },
        slot->result);
  }
  slot->finish(*this, *slot);
  if (!slot->routed_key.empty()) context_.router->request_done(*this, slot->routed_key);
  // Kept for the next request unless the connection had an unusually deep pipeline or a long
  // id, which should not hold memory for as long as it stays open.
  if (free_.size() < kKeptSlots && slot->id.capacity() <= kKeptIdCapacity) {
    slot->result.emplace<std::monostate>();
    free_.push_back(std::move(slot));
  }
}

void Conversation::refuse(std::size_t op, std::string_view id, const Error& error) {
  ++read_;
  if (quick_ == 0 && refusals_.empty()) {
    reply(op, [&](std::string& out) { return format_error(out, id, error); });
    return;
  }
  refusals_.push_back(HeldRefusal{read_, quick_, op, std::string(id), error});
}

void Conversation::send_held() {
  while (!refusals_.empty() && refusals_.front().ahead == 0) {
    const HeldRefusal& refusal = refusals_.front();
    reply(refusal.op,
          [&](std::string& out) { return format_error(out, refusal.id, refusal.error); });
    refusals_.pop_front();
    // The replies read before the next held refusal follow; the rest stay held behind it.
    std::uint64_t next = refusals_.empty() ? read_ + 1 : refusals_.front().seq;
    std::vector<std::unique_ptr<PendingRequest>> still;
    for (auto& slot : held_) {
      if (slot->seq < next) {
        finish(std::move(slot));
      } else {
        still.push_back(std::move(slot));
      }
    }
    held_ = std::move(still);
  }
}

template <typename Result, ReplyOutcome (*format)(std::string&, std::string_view, const Result&)>
void Conversation::reply_with(Conversation& self, PendingRequest& slot) {
  self.reply(slot.op,
             [&](std::string& out) { return format(out, slot.id, std::get<Result>(slot.result)); });
}

void Conversation::dispatch(std::string_view id, RequestBody& body) {
  Engine& engine = context_.engine;
  protocol::Op op = op_of(body);
  std::visit(
      Overloaded{
          [&](AcquireRequest& request) {
            bool waits = request.wait_ms > 0;
            if (waits && waiting_ >= context_.limits.max_waiting) {
              Error refusal{errc::too_many_requests,
                            "a connection may have at most " +
                                std::to_string(context_.limits.max_waiting) + " waiting acquires"};
              refuse(static_cast<std::size_t>(op), id, refusal);
              return;
            }
            auto finish = [](Conversation& self, PendingRequest& slot) {
              const auto& result = std::get<AcquireResult>(slot.result);
              bool acquired = !result.error && result.status == AcquireStatus::acquired;
              if (slot.binds) self.keys_.acquire_answered(slot.key, acquired);
              self.reply(slot.op,
                         [&](std::string& out) { return format_acquire(out, slot.id, result); });
            };
            PendingRequest& slot = pending(op, id, finish, kSmallReply, waits);
            // Only a lease bound to the connection or a queued waiter needs the engine when the
            // connection closes; other leases are not worth a map entry per lease.
            slot.binds = request.params.release_on_disconnect || waits;
            if (slot.binds) {
              slot.key.assign(request.key);
              keys_.acquire_sent(slot.key);
            }
            call(&Engine::acquire, std::move(request), slot);
          },
          [&](ReleaseRequest& request) {
            auto finish = [](Conversation& self, PendingRequest& slot) {
              const auto& result = std::get<HolderResult>(slot.result);
              if (!result.error && result.status != HolderStatus::not_holder) {
                self.keys_.lease_ended(result.key);
              }
              self.reply(slot.op,
                         [&](std::string& out) { return format_release(out, slot.id, result); });
            };
            call(&Engine::release, std::move(request), pending(op, id, finish, kSmallReply));
          },
          [&](RenewRequest& request) {
            call(&Engine::renew, std::move(request),
                 pending(op, id, reply_with<HolderResult, format_renew>, kSmallReply));
          },
          [&](RevokeRequest& request) {
            request.by = principal_name();
            call(&Engine::revoke, std::move(request),
                 pending(op, id, reply_with<HolderResult, format_revoke>, kSmallReply));
          },
          [&](CheckRequest& request) {
            call(&Engine::check, std::move(request),
                 pending(op, id, reply_with<HolderResult, format_check>, kSmallReply));
          },
          [&](GetRequest& request) {
            call(&Engine::get, std::move(request),
                 pending(op, id, reply_with<GetResult, format_get>, kGetReply));
          },
          [&](KeepaliveRequest& request) {
            call(&Engine::keepalive, std::move(request),
                 pending(op, id, reply_with<KeepaliveResult, format_keepalive>, kSmallReply));
          },
          [&](ListRequest& request) {
            std::size_t expect = kSmallReply + request.limit * kLeaseInList;
            call(&Engine::list, std::move(request),
                 pending(op, id, reply_with<ListResult, format_list>, expect));
          },
          [&](HistoryRequest& request) {
            std::size_t expect = kSmallReply + request.limit * kTenureInHistory;
            call(&Engine::history, std::move(request),
                 pending(op, id, reply_with<HistoryResult, format_history>, expect));
          },
          [&](WatchRequest& request) { start_watch(id, request); },
          [&](UnwatchRequest& request) { stop_watch(id, request); },
          [&](StatsRequest&) {
            ServerStats server{TENURE_VERSION, engine.clock().now() - context_.started_at,
                               context_.registry.size(), engine.events().subscribers(),
                               context_.cluster};
            EngineStats stats = engine.stats();
            reply(op, [&](std::string& out) { return format_stats(out, id, server, stats); });
          },
          [&](PingRequest&) { reply(op, [&](std::string& out) { return format_pong(out, id); }); },
          [&](BackupRequest& request) { backup(id, request); },
      },
      body);
}

void Conversation::backup(std::string_view id, BackupRequest& request) {
  constexpr protocol::Op op = protocol::Op::backup;
  if (std::error_code ec; std::filesystem::exists(request.dir, ec) || ec) {
    refuse(static_cast<std::size_t>(op), id,
           Error{errc::bad_request, "dir " + request.dir + " exists already"});
    return;
  }
  call(&Engine::backup, std::move(request),
       pending(op, id, reply_with<BackupResult, format_backup>, kSmallReply));
}

void Conversation::start_watch(std::string_view id, WatchRequest& request) {
  constexpr protocol::Op op = protocol::Op::watch;
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

void Conversation::stop_watch(std::string_view id, const UnwatchRequest& request) {
  constexpr protocol::Op op = protocol::Op::unwatch;
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
