#pragma once
// What the Unix and the TCP listener share: the accept loop and closing the acceptor.
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <future>
#include <string>

namespace tenure {

// After a failed accept (say, out of file descriptors) wait before the next, not spin.
inline constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);

// Accepts until the acceptor closes and hands each connection to `admit`, on a strand of its own
// (not the acceptor's): sessions run in parallel. The acceptor, io and name must outlive the loop.
template <typename Acceptor, typename Admit>
boost::asio::awaitable<void> accept_connections(Acceptor& acceptor, boost::asio::io_context& io,
                                                const std::string& name, Admit admit) {
  namespace asio = boost::asio;
  asio::steady_timer backoff(acceptor.get_executor());
  while (acceptor.is_open()) {
    auto strand = asio::make_strand(io);
    typename Acceptor::protocol_type::socket socket(strand);
    auto [error] = co_await acceptor.async_accept(socket, asio::as_tuple(asio::use_awaitable));
    if (!acceptor.is_open()) co_return;
    if (error) {
      spdlog::warn("accept on {} failed: {}", name, error.message());
      backoff.expires_after(kAcceptBackoff);
      co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    admit(std::move(socket), strand);
  }
}

// Closes the acceptor on its own executor (the accept loop's) and waits until it is closed.
template <typename Acceptor>
void close_acceptor(Acceptor& acceptor) {
  std::promise<void> closed;
  boost::asio::post(acceptor.get_executor(), [&] {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    closed.set_value();
  });
  closed.get_future().wait();
}

}  // namespace tenure
