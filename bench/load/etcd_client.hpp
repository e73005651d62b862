#pragma once
// The lease lock as etcd offers it, through its v3 HTTP/JSON gateway on loopback: grant a
// lease, then a transaction that puts the key with that lease only if it does not exist
// (create_revision == 0); the put's revision is the fencing token. Release revokes the lease,
// which deletes the key. HTTP/1.1 answers one request at a time per connection, so each client
// connection keeps a pool of up to --pipeline keep-alive HTTP connections.
#include "bench/load/lock_client.hpp"

namespace tenure::bench {

std::unique_ptr<LockClient> make_etcd_client(const Config& config, boost::asio::any_io_executor ex);

}  // namespace tenure::bench
