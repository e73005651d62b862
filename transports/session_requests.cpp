// The session's side of each request: which engine call serves it and how its result is written
// back. Engine replies arrive on engine threads; everything here after the call runs on the
// session's strand.
#include <boost/asio/post.hpp>

#include "transports/reply_format.hpp"
#include "transports/session.hpp"

namespace tenure {
namespace {

template <typename... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};

template <typename Result>
using Formatter = void (*)(std::string&, std::string_view, const Result&);

// The usual result handler: format the result as the reply to request `id`.
template <typename Result>
auto reply_with(std::string id, Formatter<Result> format) {
  return [id = std::move(id), format](Session& session, const Result& result) {
    session.send([&](std::string& out) { format(out, id, result); });
  };
}

}  // namespace

template <typename Request, typename Result, typename OnResult>
void Session::call(void (Engine::*op)(Request, Reply<Result>), Request request,
                   OnResult on_result) {
  ++inflight_;
  request.caller = caller();
  auto reply = [self = shared_from_this(), on_result = std::move(on_result)](Result result) {
    boost::asio::post(self->strand_, [self, on_result, result = std::move(result)] {
      --self->inflight_;
      on_result(*self, result);
      self->settle();
    });
  };
  (context_.engine.*op)(std::move(request), std::move(reply));
}

void Session::dispatch(std::string id, RequestBody& body) {
  Engine& engine = context_.engine;
  auto unsupported = [&](std::string_view op) {
    std::string message = std::string(op) + " is not supported yet";
    send([&](std::string& out) { format_error(out, id, {errc::bad_request, message}); });
  };
  std::visit(
      Overloaded{
          [&](AcquireRequest& request) {
            std::string key = request.key;
            keys_.acquire_sent(key);
            call(&Engine::acquire, std::move(request),
                 [id = std::move(id), key](Session& session, const AcquireResult& result) {
                   bool acquired = !result.error && result.status == AcquireStatus::acquired;
                   session.keys_.acquire_answered(key, acquired);
                   session.send([&](std::string& out) { format_acquire(out, id, result); });
                 });
          },
          [&](ReleaseRequest& request) {
            call(&Engine::release, std::move(request),
                 [id = std::move(id)](Session& session, const HolderResult& result) {
                   if (!result.error && result.status != HolderStatus::not_holder) {
                     session.keys_.lease_ended(result.key);
                   }
                   session.send([&](std::string& out) { format_release(out, id, result); });
                 });
          },
          [&](RenewRequest& request) {
            call(&Engine::renew, std::move(request), reply_with(std::move(id), &format_renew));
          },
          [&](RevokeRequest& request) {
            call(&Engine::revoke, std::move(request), reply_with(std::move(id), &format_revoke));
          },
          [&](CheckRequest& request) {
            call(&Engine::check, std::move(request), reply_with(std::move(id), &format_check));
          },
          [&](GetRequest& request) {
            call(&Engine::get, std::move(request), reply_with(std::move(id), &format_get));
          },
          [&](KeepaliveRequest& request) {
            call(&Engine::keepalive, std::move(request),
                 reply_with(std::move(id), &format_keepalive));
          },
          [&](ListRequest& request) {
            call(&Engine::list, std::move(request), reply_with(std::move(id), &format_list));
          },
          [&](HistoryRequest& request) {
            call(&Engine::history, std::move(request), reply_with(std::move(id), &format_history));
          },
          [&](WatchRequest&) { unsupported("watch"); },
          [&](UnwatchRequest&) { unsupported("unwatch"); },
          [&](StatsRequest&) {
            ServerStats server{TENURE_VERSION, engine.clock().now() - context_.started_at,
                               context_.registry.size(), engine.events().subscribers()};
            EngineStats stats = engine.stats();
            send([&](std::string& out) { format_stats(out, id, server, stats); });
          },
          [&](PingRequest&) { send([&](std::string& out) { format_pong(out, id); }); },
      },
      body);
}

}  // namespace tenure
