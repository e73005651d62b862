#pragma once
// Talking to tenured as another user (§7): a forked child takes the identity, connects to the
// socket and sends requests; the parent gets the replies. Needs root to switch identity.
#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/e2e/json.hpp"

namespace e2e {

// The user and groups a client process runs with.
struct Identity {
  uid_t uid = 65534;  // nobody
  gid_t gid = 65534;  // nogroup
  std::vector<gid_t> groups;
};

struct AsUserResult {
  std::vector<Json> replies;  // in request order
  std::string text;           // what the child reported, for INFO
};

// Calls each request body (see LineClient::call) in order on one connection as `who`. A child
// that cannot take the identity or connect reports "ERROR …" and fewer replies.
AsUserResult call_as(const Identity& who, const std::string& socket,
                     const std::vector<std::string>& requests);

}  // namespace e2e
