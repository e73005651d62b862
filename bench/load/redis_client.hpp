#pragma once
// The fenced lock as people build it on Redis: Lua scripts run by EVALSHA over RESP on
// redis-server's Unix socket. Acquire is SET NX PX plus HINCRBY of the key's token counter
// (one atomic script, returning the token); release is compare-and-delete.
#include "bench/load/lock_client.hpp"

namespace tenure::bench {

std::unique_ptr<LockClient> make_redis_client(const Config& config,
                                              boost::asio::any_io_executor ex);

}  // namespace tenure::bench
