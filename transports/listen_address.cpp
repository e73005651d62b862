#include "transports/listen_address.hpp"

#include "core/parse_number.hpp"

namespace tenure {

namespace ip = boost::asio::ip;

std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    error = "'" + std::string(text) + "' is not HOST:PORT";
    return std::nullopt;
  }
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  auto port = parse_number<unsigned>(port_text);
  if (!port || *port > 65535) {
    error = "'" + std::string(port_text) + "' is not a port (0-65535)";
    return std::nullopt;
  }
  bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  ListenAddress address{std::string(host), {}};
  boost::system::error_code ec;
  ip::address ip = host == "localhost" ? ip::address(ip::address_v4::loopback())
                                       : ip::make_address(address.host, ec);
  if (ec || (ip.is_v6() && !bracketed) || (ip.is_v4() && bracketed)) {
    error = "'" + std::string(host) +
            "' is not an IP address (IPv6 in brackets, e.g. [::1]:7420) nor localhost";
    return std::nullopt;
  }
  address.endpoint = ip::tcp::endpoint(ip, static_cast<unsigned short>(*port));
  return address;
}

}  // namespace tenure
