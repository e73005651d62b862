#include "apps/tenured/systemd.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>

#ifdef TENURE_WITH_SYSTEMD
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#endif

namespace tenure::systemd {

namespace asio = boost::asio;

#ifdef TENURE_WITH_SYSTEMD

namespace {

// Puts `fd` in `slot` unless it is taken.
bool claim(int& slot, int fd, std::string_view kind, std::string& error) {
  if (slot >= 0) {
    error = "the service manager passed more than one " + std::string(kind) + " socket";
    return false;
  }
  slot = fd;
  return true;
}

std::uint64_t watchdog_usec() {
  std::uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}

}  // namespace

bool take_inherited_sockets(InheritedSockets& sockets, std::string& error) {
  int count = sd_listen_fds(1);
  if (count < 0) {
    error = "cannot read the sockets passed by the service manager (LISTEN_FDS)";
    return false;
  }
  for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + count; ++fd) {
    bool ok = sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) > 0
                  ? claim(sockets.unix_fd, fd, "Unix", error)
              : sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0) > 0
                  ? claim(sockets.tcp_fd, fd, "TCP", error)
                  : (error =
                         "the service manager passed a socket that is neither a listening "
                         "Unix nor TCP stream socket (fd " +
                         std::to_string(fd) + ")",
                     false);
    if (!ok) return false;
  }
  return true;
}

void notify(std::string_view state) { sd_notify(0, std::string(state).c_str()); }

#else

bool take_inherited_sockets(InheritedSockets&, std::string&) { return true; }
void notify(std::string_view) {}

namespace {
std::uint64_t watchdog_usec() { return 0; }
}  // namespace

#endif

void start_watchdog(asio::io_context& io) {
  std::uint64_t usec = watchdog_usec();
  if (usec == 0) return;
  auto ping = [&io, period = std::chrono::microseconds(usec / 2)]() -> asio::awaitable<void> {
    asio::steady_timer timer(io);
    for (;;) {
      notify("WATCHDOG=1");
      timer.expires_after(period);
      auto [error] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      if (error) co_return;
    }
  };
  asio::co_spawn(io, ping, asio::detached);
}

}  // namespace tenure::systemd
