#pragma once
// What tenured tells systemd and takes from it (packaging/systemd): READY/STOPPING/WATCHDOG
// notices (Type=notify) and the listening sockets of socket activation (tenured.socket). Built
// without libsystemd, or started by something else, each is a no-op.
#include <boost/asio/io_context.hpp>
#include <string>
#include <string_view>

namespace tenure::systemd {

// Listening sockets handed over by the service manager (LISTEN_FDS); -1 when not given.
struct InheritedSockets {
  int unix_fd = -1;  // a Unix stream socket: the lease socket
  int tcp_fd = -1;   // a TCP stream socket: the HTTP/WebSocket listener
};

// Takes the inherited sockets (and clears LISTEN_FDS); false with `error` when one is of a kind
// tenured cannot serve, or there are two of a kind.
bool take_inherited_sockets(InheritedSockets& sockets, std::string& error);

// Sends one notice, e.g. "READY=1", to $NOTIFY_SOCKET, if set.
void notify(std::string_view state);

// When the service manager asks for watchdog pings, pings from the io threads at half its
// interval until `io` stops: a daemon whose io threads hang is restarted.
void start_watchdog(boost::asio::io_context& io);

}  // namespace tenure::systemd
