#pragma once
// tenure::client::Client: a connection to tenured over its Unix socket, every op as a typed,
// blocking call with a timeout. Failures are values (protocol::Result), with the server's
// message; nothing throws on the normal path. Calls from several threads are pipelined on the
// one connection; a dropped connection is reopened by the next call.
#include <memory>
#include <string>
#include <string_view>

#include "client/lease.hpp"
#include "client/options.hpp"
#include "client/watch.hpp"
#include "protocol/replies.hpp"
#include "protocol/request.hpp"
#include "protocol/result.hpp"

namespace tenure::client {

using protocol::Failure;
using protocol::Result;

namespace detail {
class Core;
}

class Client {
 public:
  // Connects now; the failure names the problem ("cannot connect to …: no such file; is
  // tenured running?").
  static Result<Client> connect(ClientOptions options = {});

  Result<protocol::Acquired> acquire(std::string_view key, const AcquireOptions& options = {});
  Result<protocol::Renewed> renew(std::string_view key, const RenewOptions& options = {});
  Result<protocol::Released> release(std::string_view key, const ReleaseOptions& options = {});
  Result<protocol::KeepAlive> keepalive(std::optional<milliseconds> ttl = {},
                                        std::optional<std::string> owner = {});
  // The fencing check: is tenure `token` the live tenure of `key`? not_holder if not.
  Result<protocol::Valid> check(std::string_view key, std::uint64_t token,
                                std::optional<std::string> owner = {});
  Result<protocol::KeyInfo> get(std::string_view key);
  Result<protocol::LeasePage> list(const ListOptions& options = {});
  Result<protocol::HistoryPage> history(std::string_view key, const HistoryOptions& options = {});
  Result<protocol::Revoked> revoke(std::string_view key, std::optional<std::string> reason = {});
  Result<protocol::Stats> stats();
  Result<protocol::Done> ping();

  // Acquires (waiting up to options.wait) and returns the RAII handle; held if not granted.
  Result<Lease> acquire_lease(std::string_view key, LeaseOptions options = {});
  Result<Watch> watch(const WatchOptions& options = {});

  const std::string& owner() const { return owner_; }  // the calls' default owner
  const std::string& socket_path() const;

 private:
  Client(std::shared_ptr<detail::Core> core, std::string owner);
  template <typename T>
  Result<T> run(const protocol::Request& request, Result<T> (*read)(const protocol::Message&),
                milliseconds extra = {});

  std::shared_ptr<detail::Core> core_;
  std::string owner_;
};

// Where the client connects without ClientOptions::socket: $TENURE_SOCKET, else tenured's
// default path; the failure when neither can be told.
Result<std::string> resolve_socket_path(const std::optional<std::string>& socket);

}  // namespace tenure::client
