#pragma once
// The address of the HTTP/WebSocket listener (§7): HOST:PORT where HOST is an IPv4 address, a
// bracketed IPv6 address or `localhost`, and PORT 0 asks the system for a free port. No name
// lookup: the listener binds exactly what it was told.
#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace tenure {

struct ListenAddress {
  std::string host;  // as given, without brackets
  boost::asio::ip::tcp::endpoint endpoint;
};

// The address, or empty with `error` set.
std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error);

}  // namespace tenure
