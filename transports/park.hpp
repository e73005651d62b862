#pragma once
// A coroutine with nothing to do parks on a timer that never expires; whoever gives it work
// cancels the timer if `parked` says it waits there.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tenure {

inline boost::asio::awaitable<void> park(boost::asio::steady_timer& wake, bool& parked) {
  parked = true;
  wake.expires_at(boost::asio::steady_timer::time_point::max());
  co_await wake.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  parked = false;
}

}  // namespace tenure
