// A co_spawn'd task that throws is logged by name, not dropped.
#include "transports/task_failure.hpp"

#include <spdlog/sinks/ostream_sink.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <sstream>
#include <stdexcept>

namespace tenure {

TEST_CASE("an exception escaping a spawned task is logged with the task's name", "[transport]") {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  boost::asio::io_context io;
  auto failing = []() -> boost::asio::awaitable<void> {
    throw std::runtime_error("out of luck");
    co_return;
  };
  boost::asio::co_spawn(io, failing(), LogTaskFailure("test loop"));
  boost::asio::co_spawn(
      io, []() -> boost::asio::awaitable<void> { co_return; }(), LogTaskFailure("quiet loop"));
  io.run();
  spdlog::set_default_logger(previous);
  CHECK(log.str().find("test loop failed: out of luck") != std::string::npos);
  CHECK(log.str().find("quiet loop") == std::string::npos);
}

}  // namespace tenure
