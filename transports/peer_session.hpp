#pragma once
// The owner's end of a peer link (docs/protocol.md, "Peer link"): another node of the cluster
// connected to --peer-listen to forward its clients' requests. The first line must be the
// node's hello with the cluster's secret, within a few seconds, or the link closes. Each client
// connection of that node gets a proxy conversation here, made by its first request, which serves
// its requests as that client (its uid, and a connection of its own for connection-bound leases
// and waiters); replies and `lost` notices of all proxies go back over the link, coalesced into
// one write per burst. A peer_disconnect ends a proxy; the link's end ends them all (the node is
// gone or will connect again, and its clients' bound leases go as if their connections closed).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster_view.hpp"
#include "transports/conversation.hpp"
#include "transports/server_context.hpp"

namespace tenure {

class ProxyConversation;

class PeerSession : public std::enable_shared_from_this<PeerSession> {
 public:
  using Socket = boost::asio::ip::tcp::socket;
  using Strand = Conversation::Strand;

  PeerSession(Socket socket, Strand strand, ServerContext& context, const ClusterView& cluster);

  void start();
  // Closes the link and ends its proxies. Any thread.
  void abort();

  // The proxies' side, on the strand.
  // Appends one message of the proxy for connection `conn`; not a reply: tagged with `conn`.
  void queue(MessageFormat format, ConnId conn);
  std::size_t unwritten_bytes() const { return pending_.size() + outgoing_.size(); }
  bool closed() const { return closed_; }
  // After a reply: reading may resume.
  void settle();

 private:
  boost::asio::awaitable<void> read_loop();
  boost::asio::awaitable<void> write_loop();
  bool hello(std::string_view line);
  void handle_line(std::string_view line, Millis read_at);
  void close();

  Socket socket_;
  Strand strand_;
  ServerContext& context_;
  const ClusterView& cluster_;
  std::optional<std::string> node_;  // once it said hello
  boost::asio::steady_timer wake_reader_;
  boost::asio::steady_timer wake_writer_;
  boost::asio::steady_timer deadline_;  // the hello's, then each write's
  bool reader_waits_ = false;
  bool writer_idle_ = false;
  bool closed_ = false;
  std::string pending_;
  std::string outgoing_;
  std::unordered_map<ConnId, std::shared_ptr<ProxyConversation>> proxies_;
};

// Accepts peer links on --peer-listen.
class PeerServer {
 public:
  PeerServer(boost::asio::io_context& io, ServerContext& context, const ClusterView& cluster);

  // Binds and listens on HOST:PORT; false with `error` if not.
  bool listen(const std::string& address, std::string& error);
  unsigned short port() const;
  void start();
  // Stops accepting and closes every link. Blocks; call it from outside the io threads.
  void stop();

 private:
  boost::asio::awaitable<void> accept_loop();

  boost::asio::io_context& io_;
  ServerContext& context_;
  const ClusterView& cluster_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::string name_;
  std::mutex mutex_;
  std::vector<std::weak_ptr<PeerSession>> sessions_;
};

}  // namespace tenure
