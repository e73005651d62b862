#pragma once
// tenure::client::Client: a connection to tenured over its Unix socket (or a WebSocket), every op
// as a typed, blocking call with a timeout. Failures are values (protocol::Result), with the
// server's message; nothing throws on the normal path. Calls from several threads are pipelined on
// the one connection; a dropped connection is reopened by the next call.
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "client/lease.hpp"
#include "client/options.hpp"
#include "client/watch.hpp"
#include "core/default_paths.hpp"
#include "protocol/replies.hpp"
#include "protocol/request.hpp"
#include "protocol/result.hpp"

namespace tenure::client {

using protocol::Failure;
using protocol::Result;

namespace detail {
class Core;
}

// One op's request and how to read its reply.
template <typename T>
struct Call {
  protocol::Request request;
  Result<T> (*read)(const protocol::Message&);
  milliseconds extra{0};  // added to the timeout: a waiting acquire's wait
};

class Client {
 public:
  // Connects now; the failure names the problem ("cannot connect to …: no such file; is
  // tenured running?").
  static Result<Client> connect(ClientOptions options = {});

  // Blocking calls, each bounded by the client's timeout (plus its wait).
  Result<protocol::Acquired> acquire(std::string_view key, const AcquireOptions& options = {}) {
    return run(acquire_call(key, options));
  }
  Result<protocol::Renewed> renew(std::string_view key, const RenewOptions& options = {}) {
    return run(renew_call(key, options));
  }
  Result<protocol::Released> release(std::string_view key, const ReleaseOptions& options = {}) {
    return run(release_call(key, options));
  }
  Result<protocol::KeepAlive> keepalive(std::optional<milliseconds> ttl = {},
                                        std::optional<std::string> owner = {}) {
    return run(keepalive_call(ttl, std::move(owner)));
  }
  // The fencing check: is tenure `token` the live tenure of `key`? not_holder if not.
  Result<protocol::Valid> check(std::string_view key, std::uint64_t token,
                                std::optional<std::string> owner = {}) {
    return run(check_call(key, token, std::move(owner)));
  }
  Result<protocol::KeyInfo> get(std::string_view key) { return run(get_call(key)); }
  Result<protocol::LeasePage> list(const ListOptions& options = {}) {
    return run(list_call(options));
  }
  Result<protocol::HistoryPage> history(std::string_view key, const HistoryOptions& options = {}) {
    return run(history_call(key, options));
  }
  Result<protocol::Revoked> revoke(std::string_view key, std::optional<std::string> reason = {}) {
    return run(revoke_call(key, std::move(reason)));
  }
  Result<protocol::Stats> stats() { return run(stats_call()); }
  Result<protocol::Done> ping() { return run(ping_call()); }

  // The same on Asio: the completion signature is void(Result<T>), so a callback, use_future or
  // `co_await client.async_acquire(key, {}, asio::use_awaitable)` all work. The completion runs
  // on the token's associated executor (else on the client's io thread).
  template <typename Token>
  auto async_acquire(std::string_view key, const AcquireOptions& options, Token&& token) {
    return async_run(acquire_call(key, options), std::forward<Token>(token));
  }
  template <typename Token>
  auto async_renew(std::string_view key, const RenewOptions& options, Token&& token) {
    return async_run(renew_call(key, options), std::forward<Token>(token));
  }
  template <typename Token>
  auto async_release(std::string_view key, const ReleaseOptions& options, Token&& token) {
    return async_run(release_call(key, options), std::forward<Token>(token));
  }
  template <typename Token>
  auto async_check(std::string_view key, std::uint64_t fencing_token, Token&& token) {
    return async_run(check_call(key, fencing_token, {}), std::forward<Token>(token));
  }
  template <typename Token>
  auto async_get(std::string_view key, Token&& token) {
    return async_run(get_call(key), std::forward<Token>(token));
  }
  template <typename Token>
  auto async_ping(Token&& token) {
    return async_run(ping_call(), std::forward<Token>(token));
  }

  // Acquires (waiting up to options.wait) and returns the RAII handle; held if not granted.
  Result<Lease> acquire_lease(std::string_view key, LeaseOptions options = {});
  Result<Watch> watch(const WatchOptions& options = {});

  const std::string& owner() const { return owner_; }  // the calls' default owner
  const std::string& address() const;                  // the socket path or URL

 private:
  Client(std::shared_ptr<detail::Core> core, std::string owner);

  Call<protocol::Acquired> acquire_call(std::string_view key, const AcquireOptions& o) const;
  Call<protocol::Renewed> renew_call(std::string_view key, const RenewOptions& o) const;
  Call<protocol::Released> release_call(std::string_view key, const ReleaseOptions& o) const;
  Call<protocol::KeepAlive> keepalive_call(std::optional<milliseconds> ttl,
                                           std::optional<std::string> owner) const;
  Call<protocol::Valid> check_call(std::string_view key, std::uint64_t token,
                                   std::optional<std::string> owner) const;
  Call<protocol::KeyInfo> get_call(std::string_view key) const;
  Call<protocol::LeasePage> list_call(const ListOptions& o) const;
  Call<protocol::HistoryPage> history_call(std::string_view key, const HistoryOptions& o) const;
  Call<protocol::Revoked> revoke_call(std::string_view key,
                                      std::optional<std::string> reason) const;
  Call<protocol::Stats> stats_call() const;
  Call<protocol::Done> ping_call() const;

  Result<protocol::Message> call(const protocol::Request& request, milliseconds extra);
  // Starts `request` on the io thread; `done` is called there with the reply or a failure.
  void start(protocol::Request request, milliseconds extra,
             std::function<void(Result<protocol::Message>)> done);

  template <typename T>
  Result<T> run(const Call<T>& c) {
    auto reply = call(c.request, c.extra);
    if (!reply) return reply.error();
    return c.read(*reply);
  }

  template <typename T, typename Token>
  auto async_run(Call<T> c, Token&& token) {
    namespace asio = boost::asio;
    return asio::async_initiate<Token, void(Result<T>)>(
        [this](auto handler, Call<T> c) {
          auto executor = asio::get_associated_executor(handler, io_executor());
          using Handler = decltype(handler);
          auto shared = std::make_shared<Handler>(std::move(handler));
          auto work = std::make_shared<asio::executor_work_guard<decltype(executor)>>(executor);
          start(std::move(c.request), c.extra,
                [shared, work, read = c.read](Result<protocol::Message> reply) {
                  Result<T> result = reply ? read(*reply) : Result<T>(reply.error());
                  asio::dispatch(work->get_executor(),
                                 [shared, work, result = std::move(result)]() mutable {
                                   (*shared)(std::move(result));
                                 });
                });
        },
        token, std::move(c));
  }
  boost::asio::io_context::executor_type io_executor();

  std::shared_ptr<detail::Core> core_;
  std::string owner_;
};

// Where the client connects: ClientOptions::socket, else $TENURE_SOCKET, else the per-user
// socket if it exists, else the system one (/run/tenure/tenured.sock) if it exists, else the
// per-user one (the CLI's rule, core/default_paths.hpp); the failure when none can be told.
Result<SocketChoice> resolve_socket_path(const std::optional<std::string>& socket);

}  // namespace tenure::client
