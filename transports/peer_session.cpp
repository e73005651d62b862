#include "transports/peer_session.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <vector>

#include "transports/acceptor.hpp"
#include "transports/line_buffer.hpp"
#include "transports/listen_address.hpp"
#include "transports/park.hpp"
#include "transports/peer_wire.hpp"
#include "transports/reply_format.hpp"
#include "transports/request_parser.hpp"
#include "transports/task_failure.hpp"

namespace tenure {

namespace asio = boost::asio;
using asio::as_tuple;
using asio::use_awaitable;

namespace {

constexpr auto kHelloTimeout = std::chrono::seconds(5);
// A forwarded line is a client's line and its via.
constexpr std::size_t kViaAllowance = 1024;
// Proxied connections per link; a request for one more is refused.
constexpr std::size_t kMaxProxies = 65'536;

// Constant time: the comparison must not tell how much of a guess was right.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ |= a[i] ^ b[i];
  return differ == 0;
}

}  // namespace

// A client of another node, as this node serves it.
class ProxyConversation final : public Conversation {
 public:
  ProxyConversation(ServerContext& context, Strand strand, const Via& via,
                    std::shared_ptr<PeerSession> link)
      : Conversation(context, std::move(strand), Transport::unix_socket,
                     Credentials{via.uid, via.admin, {}}),
        link_(std::move(link)),
        via_conn_(via.conn) {}

  void start() { open(); }
  void serve(std::string_view line, Millis read_at) { handle_request(line, read_at); }
  // Its client's connection ended (peer_disconnect), or the link did: what the connection bound
  // goes. Replies to what it asked before still go back while the link lasts, as a closing
  // client's do.
  void end() { disconnect(); }
  bool proxied() const override { return true; }
  void drain() override {}
  void abort() override {}

 private:
  void queue(MessageFormat format, const std::shared_ptr<Subscription>&) override {
    link_->queue(format, via_conn_);
  }
  std::size_t unwritten_bytes() const override { return link_->unwritten_bytes(); }
  bool ended() const override { return link_->closed(); }
  void settle() override { link_->settle(); }

  // Held until the proxy goes, once its last reply is queued: the link's map of proxies lets go
  // of it when its client's connection ends, or when the link closes.
  std::shared_ptr<PeerSession> link_;
  const ConnId via_conn_;
};

PeerSession::PeerSession(Socket socket, Strand strand, ServerContext& context,
                         const ClusterView& cluster)
    : socket_(std::move(socket)),
      strand_(std::move(strand)),
      context_(context),
      cluster_(cluster),
      wake_reader_(strand_),
      wake_writer_(strand_),
      deadline_(strand_) {}

void PeerSession::start() {
  deadline_.expires_after(kHelloTimeout);
  deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->node_) {
      spdlog::warn("a peer link said no hello within {} s; closing it", kHelloTimeout.count());
      self->close();
    }
  });
  asio::co_spawn(
      strand_, [self = shared_from_this()] { return self->read_loop(); },
      LogTaskFailure("peer session read loop"));
  asio::co_spawn(
      strand_, [self = shared_from_this()] { return self->write_loop(); },
      LogTaskFailure("peer session write loop"));
}

void PeerSession::abort() {
  asio::post(strand_, [self = shared_from_this()] { self->close(); });
}

asio::awaitable<void> PeerSession::read_loop() {
  LineBuffer input(context_.limits.max_frame + kViaAllowance);
  while (!closed_) {
    // Replies owed past the bound: read no more until the link takes them.
    if (unwritten_bytes() > context_.limits.max_output) {
      co_await park(wake_reader_, reader_waits_);
      continue;
    }
    auto [ec, n] = co_await socket_.async_read_some(input.space(), as_tuple(use_awaitable));
    if (ec) break;
    Millis read_at = context_.engine.clock().now();
    bool fits = input.filled(n, [&](std::string_view line) {
      if (node_) {
        handle_line(line, read_at);
      } else if (!hello(line)) {
        close();
      }
      return !closed_;
    });
    if (!fits) {
      spdlog::error("node {} sent a line longer than {} bytes; closing the link",
                    node_.value_or("?"), context_.limits.max_frame + kViaAllowance);
      break;
    }
  }
  close();
}

bool PeerSession::hello(std::string_view line) {
  auto said = parse_peer_hello(line);
  if (!said) {
    spdlog::warn("a peer link began without a peer_hello; closing it");
    return false;
  }
  if (!same_secret(said->secret, cluster_.secret())) {
    spdlog::warn("node {} presented a wrong cluster secret; closing its link", said->node);
    return false;
  }
  deadline_.cancel();
  node_ = said->node;
  spdlog::info("peer link from node {} opened", *node_);
  return true;
}

void PeerSession::handle_line(std::string_view line, Millis read_at) {
  auto parsed = parse_forwarded(line);
  if (auto* problem = std::get_if<std::string>(&parsed)) {
    spdlog::error("node {} sent a malformed peer request ({}): {:.200}", *node_, *problem, line);
    return;
  }
  auto& request = std::get<PeerRequest>(parsed);
  if (request.via.node != *node_) {
    spdlog::error("node {} forwarded a request as node {}; ignored", *node_, request.via.node);
    return;
  }
  auto found = proxies_.find(request.via.conn);
  if (request.disconnect) {
    if (found == proxies_.end()) return;
    found->second->end();
    proxies_.erase(found);
    return;
  }
  if (found == proxies_.end()) {
    if (proxies_.size() >= kMaxProxies) {
      // The reply names the request's link id, so that it answers the request.
      std::string_view id = thread_request_parser().parse(request.request).id;
      format_error(pending_, id,
                   Error{errc::too_many_requests, "too many connections proxied over one link"});
      pending_.push_back('\n');
      settle();
      return;
    }
    auto proxy =
        std::make_shared<ProxyConversation>(context_, strand_, request.via, shared_from_this());
    proxy->start();
    found = proxies_.emplace(request.via.conn, std::move(proxy)).first;
  }
  found->second->serve(request.request, read_at);
}

void PeerSession::queue(MessageFormat format, ConnId conn) {
  std::size_t start = pending_.size();
  format(pending_);
  if (!std::string_view(pending_).substr(start).starts_with(R"({"id":)")) {
    tag_for_connection(pending_, start, conn);
  }
  pending_.push_back('\n');
  if (writer_idle_) wake_writer_.cancel();
}

void PeerSession::settle() {
  if (writer_idle_ && !pending_.empty()) wake_writer_.cancel();
  if (reader_waits_ && unwritten_bytes() <= context_.limits.max_output) wake_reader_.cancel();
}

asio::awaitable<void> PeerSession::write_loop() {
  while (!closed_) {
    if (pending_.empty()) {
      co_await park(wake_writer_, writer_idle_);
      continue;
    }
    std::swap(pending_, outgoing_);
    deadline_.expires_after(context_.limits.write_timeout);
    deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return;
      spdlog::warn("node {} took no reply for {} ms; closing its link", self->node_.value_or("?"),
                   self->context_.limits.write_timeout.count());
      self->close();
    });
    auto [ec, n] =
        co_await asio::async_write(socket_, asio::buffer(outgoing_), as_tuple(use_awaitable));
    deadline_.cancel();
    outgoing_.clear();
    if (ec) break;
    settle();
  }
  close();
}

void PeerSession::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
  wake_reader_.cancel();
  wake_writer_.cancel();
  deadline_.cancel();
  if (node_) {
    spdlog::info("peer link from node {} closed; ending its {} proxied connections", *node_,
                 proxies_.size());
  }
  auto proxies = std::move(proxies_);
  proxies_.clear();
  for (auto& [conn, proxy] : proxies) proxy->end();
}

PeerServer::PeerServer(asio::io_context& io, ServerContext& context, const ClusterView& cluster)
    : io_(io), context_(context), cluster_(cluster), acceptor_(asio::make_strand(io)) {}

bool PeerServer::listen(const std::string& address, std::string& error) {
  auto parsed = parse_listen_address(address, error);
  if (!parsed) return false;
  boost::system::error_code ec;
  acceptor_.open(parsed->endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(parsed->endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error = "cannot listen for peers on " + address + ": " + ec.message();
    return false;
  }
  name_ = "the peer listener " + address;
  return true;
}

unsigned short PeerServer::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void PeerServer::start() {
  asio::co_spawn(acceptor_.get_executor(), accept_loop(), LogTaskFailure("peer accept loop"));
}

asio::awaitable<void> PeerServer::accept_loop() {
  return accept_connections(
      acceptor_, io_, name_,
      [this](asio::ip::tcp::socket socket, const Conversation::Strand& strand) {
        boost::system::error_code ignored;
        socket.set_option(asio::ip::tcp::no_delay(true), ignored);
        auto session = std::make_shared<PeerSession>(std::move(socket), strand, context_, cluster_);
        std::lock_guard lock(mutex_);
        std::erase_if(sessions_, [](const auto& weak) { return weak.expired(); });
        sessions_.push_back(session);
        session->start();
      });
}

void PeerServer::stop() {
  close_acceptor(acceptor_);
  std::lock_guard lock(mutex_);
  for (auto& weak : sessions_) {
    if (auto session = weak.lock()) session->abort();
  }
  sessions_.clear();
}

}  // namespace tenure
