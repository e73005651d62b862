#pragma once
// tenured's wire protocol (NDJSON over its Unix socket; see shared/CONTRACT.md §2-3).
#include "bench/load/lock_client.hpp"

namespace tenure::bench {

std::unique_ptr<LockClient> make_tenure_client(const Config& config,
                                               boost::asio::any_io_executor ex);

}  // namespace tenure::bench
