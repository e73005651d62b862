#pragma once
// The lines of the peer link between two nodes of a cluster (docs/protocol.md, "Peer link"). The
// node a client is connected to forwards its request to the key's owner as the client's own line
// with two changes: `via` first (who asked) and the id replaced by a link id. The owner's reply
// names that link id, which the forwarding node swaps back for the client's id, leaving the rest
// of the reply as the owner wrote it. Unsolicited messages for a proxied connection (`lost`)
// carry `via_conn` first instead.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core/lease.hpp"

namespace tenure {

// Who asked, on the node the client is connected to.
struct Via {
  std::string node;
  ConnId conn = 0;  // the client's connection there
  Principal uid = 0;
  bool admin = false;  // as that node judged the client (§7)
};

struct PeerHello {
  std::string node;
  std::string secret;
};

// Where the id's value is in a request line: [first, first + second). Also a null id.
using IdSpan = std::pair<std::size_t, std::size_t>;

// The first line of a link: {"op":"peer_hello","node":ID,"secret":S}.
void format_peer_hello(std::string& out, std::string_view node, std::string_view secret);
std::optional<PeerHello> parse_peer_hello(std::string_view line);

// Appends `line` (a valid request object) as forwarded: `via` first and `link_id` as its id.
void format_forwarded(std::string& out, const Via& via, std::uint64_t link_id,
                      std::string_view line, std::optional<IdSpan> id);
// Tells the owner that a client connection ended: its connection-bound leases and waiters go.
void format_peer_disconnect(std::string& out, const Via& via);

// A forwarded line as the owner reads it: `via` and the request without it (or `disconnect`
// for a peer_disconnect).
struct PeerRequest {
  Via via;
  std::string request;
  bool disconnect = false;
};
// The request, or why the line is not a forwarded request.
std::variant<PeerRequest, std::string> parse_forwarded(std::string_view line);

// For the node of a proxied connection, of tenure `token` of `key` (ForwardedLeases); its client
// is not told. `moved`: the tenure was re-acquired on another connection, which hears of its loss
// from now on. `unowned`: its slot went to another node, which does not know the connection, so
// the node of the connection tells it from now on.
enum class PeerNotice { moved, unowned };
void format_peer_notice(std::string& out, PeerNotice notice, std::string_view key,
                        std::uint64_t token);
// A message for a proxied connection: a peer notice's kind, key and token, or none if it is a
// message for the client.
std::optional<PeerNotice> parse_peer_notice(std::string_view message, std::string& key,
                                            std::uint64_t& token);

// Marks the message appended to `out` at `start` as one for the proxied connection `conn`.
void tag_for_connection(std::string& out, std::size_t start, ConnId conn);

// A line from the owner: a reply to link id `link_id`, whose text after the id is `rest`, or a
// message for connection `conn`, `message` with the tag taken off.
struct LinkReply {
  std::uint64_t link_id = 0;
  std::string_view rest;  // `,"status":…}`
};
struct LinkNotice {
  ConnId conn = 0;
  std::string message;
};
std::optional<std::variant<LinkReply, LinkNotice>> parse_link_line(std::string_view line);
// The reply as the client sees it: its own `id` (raw JSON, or empty for none) and the owner's rest.
void restore_reply(std::string& out, std::string_view id, std::string_view rest);

}  // namespace tenure
