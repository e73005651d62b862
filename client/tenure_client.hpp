#pragma once
// The C++ client of tenured, under the names users write: tenure::Client, tenure::Lease,
// tenure::Watch. (Do not include core/lease.hpp in the same file: it has its own tenure::Lease.)
#include "client/client.hpp"

namespace tenure {

using client::Client;
using client::ClientOptions;
using client::Lease;
using client::LeaseOptions;
using client::Watch;
using client::WatchOptions;
using protocol::client_errc;

}  // namespace tenure
