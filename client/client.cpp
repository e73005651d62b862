#include "client/client.hpp"

#include <boost/asio/post.hpp>
#include <future>
#include <utility>

#include "client/detail/core.hpp"
#include "client/detail/lease_state.hpp"
#include "client/detail/watch_state.hpp"
#include "client/owner.hpp"

namespace tenure::client {

using protocol::client_errc;
using protocol::Op;
using protocol::Request;

namespace {

// Runs `start(done)` on the io thread and waits for `done`'s result.
template <typename T, typename Start>
Result<T> on_io(detail::Core& core, Start start) {
  if (core.on_io_thread()) return detail::Core::blocking_on_io_thread();
  std::promise<Result<T>> promise;
  auto future = promise.get_future();
  boost::asio::post(core.io(),
                    [&] { start([&promise](Result<T> r) { promise.set_value(std::move(r)); }); });
  return future.get();  // bounded by the call's own timer
}

std::optional<std::int64_t> ms(const std::optional<milliseconds>& d) {
  return d ? std::optional<std::int64_t>(d->count()) : std::nullopt;
}

}  // namespace

Result<SocketChoice> resolve_socket_path(const std::optional<std::string>& socket) {
  if (auto choice = choose_socket(socket)) return *choice;
  return Failure(client_errc::invalid_argument,
                 std::string("cannot tell where tenured's socket is: HOME is unset and ") +
                     kSystemSocketPath +
                     " does not exist; set TENURE_SOCKET or ClientOptions::socket");
}

namespace {

detail::Core::Endpoint url_endpoint(const std::string& url,
                                    const std::optional<std::string>& token) {
  return {url, [url, token](boost::asio::io_context& io) {
            return detail::websocket_stream(io, url, token);
          }};
}

detail::Core::Endpoint socket_endpoint(const SocketChoice& path) {
  return {path.path, [path](boost::asio::io_context& io) { return detail::unix_stream(io, path); }};
}

}  // namespace

Result<Client> Client::connect(ClientOptions options) {
  std::vector<detail::Core::Endpoint> endpoints;
  if (!options.endpoints.empty()) {
    if (options.socket || options.url) {
      return Failure(client_errc::invalid_argument,
                     "ClientOptions takes endpoints, or a socket or url, not both");
    }
    for (const auto& e : options.endpoints) {
      if (e.starts_with("ws://")) {
        endpoints.push_back(url_endpoint(e, options.token));
      } else {
        endpoints.push_back(socket_endpoint(SocketChoice{e, std::nullopt}));
      }
    }
  } else if (options.url) {
    endpoints.push_back(url_endpoint(*options.url, options.token));
  } else {
    auto path = resolve_socket_path(options.socket);
    if (!path) return path.error();
    endpoints.push_back(socket_endpoint(*path));
  }
  auto core = std::make_shared<detail::Core>(std::move(endpoints), options.timeout);
  auto connected = on_io<protocol::Done>(*core, [&core](auto done) {
    if (auto failure = core->ensure_connected()) return done(std::move(*failure));
    done(protocol::Done{});
  });
  if (!connected) return connected.error();
  return Client(std::move(core), options.owner ? *options.owner : new_owner());
}

Client::Client(std::shared_ptr<detail::Core> core, std::string owner)
    : core_(std::move(core)), owner_(std::move(owner)) {}

const std::string& Client::address() const { return core_->address(); }

Result<protocol::Message> Client::call(const protocol::Request& request, milliseconds extra) {
  return core_->call_blocking(request, extra);
}

boost::asio::io_context::executor_type Client::io_executor() { return core_->io().get_executor(); }

void Client::start(protocol::Request request, milliseconds extra,
                   std::function<void(Result<protocol::Message>)> done) {
  // A raw pointer: a handler must never own the Core (its destructor joins the io thread).
  boost::asio::post(core_->io(), [core = core_.get(), request = std::move(request), extra,
                                  done = std::move(done)]() mutable {
    core->call(request, extra, std::move(done));
  });
}

Call<protocol::Acquired> Client::acquire_call(std::string_view key, const AcquireOptions& o) const {
  Request r{.op = Op::acquire, .key = std::string(key), .owner = o.owner.value_or(owner_)};
  r.ttl_ms = ms(o.ttl);
  r.wait_ms = ms(o.wait);
  r.open_ended = o.open_ended;
  r.release_on_disconnect = o.release_on_disconnect;
  r.lock_delay_ms = ms(o.lock_delay);
  return {std::move(r), protocol::read_acquired, o.wait.value_or(milliseconds(0))};
}

Call<protocol::Renewed> Client::renew_call(std::string_view key, const RenewOptions& o) const {
  Request r{.op = Op::renew, .key = std::string(key), .owner = o.owner.value_or(owner_)};
  r.ttl_ms = ms(o.ttl);
  r.token = o.token;
  return {std::move(r), protocol::read_renewed};
}

Call<protocol::Released> Client::release_call(std::string_view key, const ReleaseOptions& o) const {
  Request r{.op = Op::release, .key = std::string(key), .owner = o.owner.value_or(owner_)};
  r.token = o.token;
  return {std::move(r), protocol::read_released};
}

Call<protocol::KeepAlive> Client::keepalive_call(std::optional<milliseconds> ttl,
                                                 std::optional<std::string> owner) const {
  Request r{.op = Op::keepalive, .owner = owner.value_or(owner_)};
  r.ttl_ms = ms(ttl);
  return {std::move(r), protocol::read_keepalive};
}

Call<protocol::Valid> Client::check_call(std::string_view key, std::uint64_t token,
                                         std::optional<std::string> owner) const {
  Request r{.op = Op::check, .key = std::string(key), .owner = std::move(owner)};
  r.token = token;
  return {std::move(r), protocol::read_valid};
}

Call<protocol::KeyInfo> Client::get_call(std::string_view key) const {
  return {Request{.op = Op::get, .key = std::string(key)}, protocol::read_key_info};
}

Call<protocol::LeasePage> Client::list_call(const ListOptions& o) const {
  Request r{.op = Op::list, .prefix = o.prefix, .after = o.after};
  r.limit = o.limit;
  return {std::move(r), protocol::read_lease_page};
}

Call<protocol::HistoryPage> Client::history_call(std::string_view key,
                                                 const HistoryOptions& o) const {
  Request r{.op = Op::history, .key = std::string(key)};
  r.limit = o.limit;
  r.before_token = o.before_token;
  return {std::move(r), protocol::read_history_page};
}

Call<protocol::Revoked> Client::revoke_call(std::string_view key,
                                            std::optional<std::string> reason) const {
  return {Request{.op = Op::revoke, .key = std::string(key), .reason = std::move(reason)},
          protocol::read_revoked};
}

Call<protocol::Stats> Client::stats_call() const {
  return {Request{.op = Op::stats}, protocol::read_stats};
}

Call<protocol::Done> Client::ping_call() const {
  return {Request{.op = Op::ping}, protocol::read_pong};
}

Result<Lease> Client::acquire_lease(std::string_view key, LeaseOptions options) {
  std::string owner = options.owner ? *options.owner : new_owner();
  auto state = std::make_shared<detail::LeaseState>(*core_, std::string(key), std::move(options),
                                                    std::move(owner));
  auto acquired =
      on_io<protocol::Acquired>(*core_, [&state](auto done) { state->acquire(std::move(done)); });
  if (!acquired) return acquired.error();
  return Lease(core_, std::move(state));
}

Result<Watch> Client::watch(const WatchOptions& options) {
  if (options.key && options.prefix) {
    return Failure(client_errc::invalid_argument, "watch takes a key or a prefix, not both");
  }
  auto state = std::make_shared<detail::WatchState>(*core_, options);
  auto watching =
      on_io<protocol::Watching>(*core_, [&state](auto done) { state->start(std::move(done)); });
  if (!watching) return watching.error();
  return Watch(core_, std::move(state), std::move(*watching));
}

// -- Lease ------------------------------------------------------------------------------------

Lease::Lease(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::LeaseState> state)
    : core_(std::move(core)), state_(std::move(state)) {}

Lease::Lease(Lease&& other) noexcept
    : core_(std::move(other.core_)),
      state_(std::move(other.state_)),
      released_(std::exchange(other.released_, false)) {}

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    discard();
    core_ = std::move(other.core_);
    state_ = std::move(other.state_);
    released_ = std::exchange(other.released_, false);
  }
  return *this;
}

Lease::~Lease() { discard(); }

void Lease::discard() {
  if (!state_ || released_) return;
  if (core_->on_io_thread()) {
    // Already where the state lives: the release goes out, and its reply is not waited for.
    released_ = true;
    state_->release([](Result<protocol::Released>) {});
    return;
  }
  (void)release();
}

namespace {
const std::string kNone;
}  // namespace

const std::string& Lease::key() const { return state_ ? state_->key() : kNone; }
const std::string& Lease::owner() const { return state_ ? state_->owner() : kNone; }
std::uint64_t Lease::token() const { return state_ ? state_->token() : 0; }
std::optional<std::chrono::milliseconds> Lease::ttl() const {
  return state_ ? state_->granted_ttl() : std::nullopt;
}
bool Lease::lost() const { return state_ && state_->lost(); }
std::string Lease::lost_reason() const { return state_ ? state_->lost_reason() : ""; }
bool Lease::wait_lost(std::chrono::milliseconds timeout) const {
  return state_ && state_->wait_lost(timeout);
}

Result<protocol::Renewed> Lease::renew() {
  if (!state_ || released_) {
    return Failure(client_errc::closed, "the lease was released or moved from");
  }
  return on_io<protocol::Renewed>(*core_, [this](auto done) { state_->renew(std::move(done)); });
}

Result<protocol::Valid> Lease::check() {
  if (!state_ || released_) {
    return Failure(client_errc::closed, "the lease was released or moved from");
  }
  Request r{.op = Op::check, .key = state_->key(), .owner = state_->owner()};
  r.token = state_->token();
  auto reply = core_->call_blocking(r);
  if (!reply) return reply.error();
  return protocol::read_valid(*reply);
}

Result<protocol::Released> Lease::release() {
  if (!state_ || released_) return protocol::Released{};
  if (core_->on_io_thread()) return detail::Core::blocking_on_io_thread();
  released_ = true;
  return on_io<protocol::Released>(*core_, [this](auto done) { state_->release(std::move(done)); });
}

// -- Watch ------------------------------------------------------------------------------------

Watch::Watch(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::WatchState> state,
             protocol::Watching watching)
    : core_(std::move(core)), state_(std::move(state)), watching_(std::move(watching)) {}

Watch::Watch(Watch&&) noexcept = default;

Watch& Watch::operator=(Watch&& other) noexcept {
  if (this != &other) {
    close();
    core_ = std::move(other.core_);
    state_ = std::move(other.state_);
    watching_ = std::move(other.watching_);
  }
  return *this;
}

Watch::~Watch() { close(); }

Result<protocol::Event> Watch::next(std::chrono::milliseconds timeout) {
  if (!state_) return Failure(client_errc::closed, "the watch was moved from");
  return state_->next(timeout);
}

std::uint64_t Watch::next_revision() const { return state_ ? state_->next_revision() : 0; }

void Watch::close() {
  if (!state_) return;
  boost::asio::post(core_->io(), [state = state_] { state->close(); });
}

}  // namespace tenure::client
