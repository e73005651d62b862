#include "transports/peer_client.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <future>
#include <vector>

#include "transports/line_buffer.hpp"
#include "transports/listen_address.hpp"
#include "transports/park.hpp"
#include "transports/peer_wire.hpp"
#include "transports/task_failure.hpp"

namespace tenure {

namespace asio = boost::asio;
using asio::as_tuple;
using asio::use_awaitable;

namespace {

constexpr auto kSweepEvery = std::chrono::milliseconds(100);
constexpr auto kFirstBackoff = std::chrono::milliseconds(50);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1'000);

}  // namespace

PeerClient::PeerClient(asio::io_context& io, const ClusterView& cluster, std::string node,
                       PeerLimits limits, Deliver deliver, std::function<void()> broken)
    : strand_(asio::make_strand(io)),
      cluster_(cluster),
      node_(std::move(node)),
      limits_(limits),
      deliver_(std::move(deliver)),
      broken_(std::move(broken)),
      socket_(strand_),
      wake_writer_(strand_),
      write_deadline_(strand_),
      sweep_timer_(strand_),
      backoff_(strand_),
      wake_run_(strand_) {}

void PeerClient::start() {
  asio::co_spawn(
      strand_, [self = shared_from_this()] { return self->run(); }, LogTaskFailure("peer link"));
  asio::co_spawn(
      strand_, [self = shared_from_this()] { return self->write_loop(); },
      LogTaskFailure("peer link writer"));
  asio::co_spawn(
      strand_, [self = shared_from_this()] { return self->sweep(); },
      LogTaskFailure("peer link deadlines"));
}

void PeerClient::stop() {
  std::promise<void> stopped;
  asio::post(strand_, [this, &stopped] {
    stopped_ = true;
    break_link();
    wake_writer_.cancel();
    sweep_timer_.cancel();
    backoff_.cancel();
    wake_run_.cancel();
    fail_all("this node is stopping");
    stopped.set_value();
  });
  stopped.get_future().wait();
}

void PeerClient::send(std::uint64_t link_id, std::string line, Steady::time_point deadline,
                      Done done) {
  asio::post(strand_, [self = shared_from_this(), link_id, line = std::move(line), deadline,
                       done = std::move(done)]() mutable {
    std::optional<Error> refusal;
    if (self->stopped_) {
      refusal = Error{errc::unavailable, "this node is stopping"};
    } else if (self->pending_.size() > self->limits_.max_queued) {
      refusal = Error{errc::unavailable,
                      "the link to node " + self->node_ + " is backed up; retry later"};
    }
    if (refusal) {
      if (done) done({}, &*refusal);
      return;
    }
    if (done) {
      self->inflight_.emplace(link_id, InFlight{deadline, std::move(done)});
      if (self->run_idle_) self->wake_run_.cancel();
    } else if (!self->connected_) {
      return;  // the owner ends a broken link's connections by itself
    }
    self->pending_.append(line).push_back('\n');
    if (self->connected_ && self->writer_idle_) self->wake_writer_.cancel();
  });
}

asio::awaitable<void> PeerClient::run() {
  auto backoff = kFirstBackoff;
  while (!stopped_) {
    // Connects when there is something to send: a node that is gone is not called forever.
    if (inflight_.empty()) {
      co_await park(wake_run_, run_idle_);
      continue;
    }
    if (co_await connect()) {
      backoff = kFirstBackoff;
      std::string hello;
      format_peer_hello(hello, cluster_.node_id(), cluster_.secret());
      hello.push_back('\n');
      pending_.insert(0, hello);
      ++epoch_;
      connected_ = true;
      if (writer_idle_) wake_writer_.cancel();
      co_await read_loop();
      if (!stopped_) {
        spdlog::warn("the peer link to node {} broke", node_);
        break_link();
        broken_();
      }
    }
    break_link();
    fail_all("the link to node " + node_ + " broke; retry");
    if (stopped_) co_return;
    backoff_.expires_after(backoff);
    co_await backoff_.async_wait(as_tuple(use_awaitable));
    backoff = std::min(backoff * 2, std::chrono::duration_cast<decltype(backoff)>(kMaxBackoff));
  }
}

asio::awaitable<bool> PeerClient::connect() {
  std::string address;
  for (const auto& node : cluster_.nodes()) {
    if (node.id == node_) address = node.peer;
  }
  std::string error;
  auto endpoint = address.empty() ? std::nullopt : parse_listen_address(address, error);
  if (!endpoint) {
    spdlog::warn("no peer address for node {}: {}", node_,
                 address.empty() ? "it is not a live node" : error);
    co_return false;
  }
  socket_ = Socket(strand_);
  write_deadline_.expires_after(limits_.connect_timeout);
  write_deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->socket_.cancel();
  });
  auto [ec] = co_await socket_.async_connect(endpoint->endpoint, as_tuple(use_awaitable));
  write_deadline_.cancel();
  if (ec || stopped_) {
    if (!stopped_)
      spdlog::warn("cannot connect to node {} at {}: {}", node_, address, ec.message());
    co_return false;
  }
  boost::system::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  co_return true;
}

asio::awaitable<void> PeerClient::read_loop() {
  LineBuffer input(limits_.max_line);
  for (;;) {
    auto [ec, n] = co_await socket_.async_read_some(input.space(), as_tuple(use_awaitable));
    if (ec) co_return;
    if (!input.filled(n, [this](std::string_view line) {
          handle_line(line);
          return true;
        })) {
      spdlog::error("node {} sent a line longer than {} bytes; closing the link", node_,
                    limits_.max_line);
      co_return;
    }
  }
}

void PeerClient::handle_line(std::string_view line) {
  if (stopped_) return;  // the router may be gone
  auto parsed = parse_link_line(line);
  if (!parsed) {
    spdlog::warn("node {} sent a line that is neither a reply nor a notice: {:.200}", node_, line);
    return;
  }
  if (auto* notice = std::get_if<LinkNotice>(&*parsed)) {
    deliver_(notice->conn, std::move(notice->message));
    return;
  }
  const auto& reply = std::get<LinkReply>(*parsed);
  auto found = inflight_.find(reply.link_id);
  if (found == inflight_.end()) return;  // answered `unavailable` already, past its deadline
  Done done = std::move(found->second.done);
  inflight_.erase(found);
  done(reply.rest, nullptr);
}

asio::awaitable<void> PeerClient::write_loop() {
  while (!stopped_) {
    if (!connected_ || pending_.empty()) {
      co_await park(wake_writer_, writer_idle_);
      continue;
    }
    std::swap(pending_, outgoing_);
    // A failure of this write must not break a link made after it.
    std::uint64_t epoch = epoch_;
    write_deadline_.expires_after(limits_.write_timeout);
    write_deadline_.async_wait([self = shared_from_this(), epoch](boost::system::error_code ec) {
      if (!ec && self->epoch_ == epoch) self->break_link();
    });
    auto [ec, n] =
        co_await asio::async_write(socket_, asio::buffer(outgoing_), as_tuple(use_awaitable));
    write_deadline_.cancel();
    outgoing_.clear();
    // The read loop ends too, and run() answers what was in flight.
    if (ec && epoch == epoch_) break_link();
  }
}

asio::awaitable<void> PeerClient::sweep() {
  while (!stopped_) {
    sweep_timer_.expires_after(kSweepEvery);
    co_await sweep_timer_.async_wait(as_tuple(use_awaitable));
    auto now = Steady::now();
    std::vector<Done> late;
    for (auto it = inflight_.begin(); it != inflight_.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      late.push_back(std::move(it->second.done));
      it = inflight_.erase(it);
    }
    if ((connected_ || !inflight_.empty()) && left_cluster()) {
      // Its etcd lease expired, and its claims with it: it can commit nothing more and its slots
      // go to other nodes, which release the connection-bound leases granted through it. A
      // stalled node keeps the link open, so what waits on it is answered now rather than at the
      // deadline, and its clients' retries reach the new owners; the link is broken as if it
      // had died, so that the connections bound to it are closed. An acquire it served before
      // stalling is safe to repeat (same owner: fresh:false).
      spdlog::warn("node {} left the cluster with {} requests unanswered; answering them", node_,
                   inflight_.size());
      fail_all("node " + node_ + " left the cluster (its etcd lease expired); retry");
      if (connected_) break_link();
    }
    if (late.empty()) continue;
    Error error{errc::unavailable, "node " + node_ + " did not answer in time; retry"};
    for (auto& done : late) done({}, &error);
    if (connected_) {
      spdlog::warn("node {} left {} requests unanswered past their deadline; connecting again",
                   node_, late.size());
      break_link();
    }
  }
}

bool PeerClient::left_cluster() const {
  auto nodes = cluster_.nodes();
  return std::none_of(nodes.begin(), nodes.end(),
                      [this](const ClusterView::Node& node) { return node.id == node_; });
}

void PeerClient::break_link() {
  connected_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void PeerClient::fail_all(const std::string& why) {
  pending_.clear();
  auto inflight = std::move(inflight_);
  inflight_.clear();
  Error error{errc::unavailable, why};
  for (auto& [id, request] : inflight) request.done({}, &error);
}

}  // namespace tenure
