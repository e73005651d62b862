#pragma once
// The default owner: `user@host:pid-` and 64 random bits. Readable, and never shared.
#include <string>

namespace tenure::client {

std::string new_owner();

}  // namespace tenure::client
