#pragma once
// This node's end of the peer link to one other node of the cluster (docs/protocol.md, "Peer
// link"): one TCP connection, made when there is a request to send (and kept), that carries the
// requests forwarded to that node and brings back their replies and the `lost` notices of the
// connections they came from. Requests are pipelined; those queued while a write is in flight go
// out together in the next write. Every request has a deadline: one the owner has not answered by
// then is answered `unavailable`, and the link, which looks stalled, is made again. When the link
// breaks, or the node leaves the cluster's view (its lease expired: it stalled or died), every
// request on it is answered `unavailable` (it may or may not have been served; each op is safe to
// retry). Everything runs on the link's strand unless said otherwise.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/cluster_view.hpp"
#include "core/errc.hpp"
#include "core/lease.hpp"

namespace tenure {

struct PeerLimits {
  std::size_t max_line = 1 << 20;     // a reply longer than this breaks the link
  std::size_t max_queued = 16 << 20;  // bytes waiting to be written; more: `unavailable`
  std::chrono::milliseconds connect_timeout{2'000};
  std::chrono::milliseconds write_timeout{5'000};
};

class PeerClient : public std::enable_shared_from_this<PeerClient> {
 public:
  using Steady = std::chrono::steady_clock;
  // With the owner's reply after its link id (`,"status":…}`), or an error instead.
  using Done = std::function<void(std::string_view rest, const Error* error)>;
  // A message for this node's connection `conn`.
  using Deliver = std::function<void(ConnId conn, std::string message)>;

  // `broken` is called when a link that was up breaks, before its requests are answered.
  PeerClient(boost::asio::io_context& io, const ClusterView& cluster, std::string node,
             PeerLimits limits, Deliver deliver, std::function<void()> broken);

  const std::string& node() const { return node_; }
  void start();
  // Instead of start(): a link of a router that stopped, which answers everything `unavailable`.
  void refuse_all() { stopped_ = true; }
  // Answers what is in flight `unavailable` and closes the link for good; calls neither
  // callback after. Blocks: call it from outside the io threads.
  void stop();
  // Sends a forwarded `line` (format_forwarded) with `link_id`; `done` is called once, on the
  // link's strand. A line that gets no reply (peer_disconnect) has no `done`: it is only written,
  // if the link is up. Any thread.
  void send(std::uint64_t link_id, std::string line, Steady::time_point deadline, Done done);

 private:
  struct InFlight {
    Steady::time_point deadline;
    Done done;
  };
  using Socket = boost::asio::ip::tcp::socket;

  boost::asio::awaitable<void> run();
  boost::asio::awaitable<bool> connect();
  boost::asio::awaitable<void> read_loop();
  boost::asio::awaitable<void> write_loop();
  boost::asio::awaitable<void> sweep();
  void handle_line(std::string_view line);
  // The node's registration is gone from the view (ClusterView::nodes).
  bool left_cluster() const;
  void fail_all(const std::string& why);
  void break_link();

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  const ClusterView& cluster_;
  const std::string node_;
  const PeerLimits limits_;
  Deliver deliver_;
  std::function<void()> broken_;
  Socket socket_;
  boost::asio::steady_timer wake_writer_;
  boost::asio::steady_timer write_deadline_;
  boost::asio::steady_timer sweep_timer_;
  boost::asio::steady_timer backoff_;
  boost::asio::steady_timer wake_run_;  // run() parks on it while there is nothing to send
  bool stopped_ = false;
  bool connected_ = false;
  bool writer_idle_ = false;
  bool run_idle_ = false;
  std::uint64_t epoch_ = 0;  // connections made so far
  std::string pending_;      // lines waiting for the next write
  std::string outgoing_;     // in the write in flight
  std::unordered_map<std::uint64_t, InFlight> inflight_;
};

}  // namespace tenure
