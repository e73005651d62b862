#pragma once
// Who may open a WebSocket, and what it may then do (§7). A browser always sends `Origin`: it
// must be the listener's own origin or an allowed one, or the handshake is refused, so that no
// other web page can drive the coordinator through a visitor's browser. Clients that are not
// browsers send none and pass. The bearer token on the upgrade request makes the client the
// server's own principal, which may mutate; without it, mutations are `unauthenticated`.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transports/conversation.hpp"

namespace tenure {

class UpgradePolicy {
 public:
  // `origins`: the listener's own and the allow-listed ones, as `scheme://host[:port]`.
  UpgradePolicy(std::string token, std::vector<std::string> origins);

  bool origin_allowed(std::optional<std::string_view> origin) const;
  // `authorization`: the upgrade request's Authorization header, if any.
  Credentials credentials(std::optional<std::string_view> authorization) const;

 private:
  std::string token_;
  std::vector<std::string> origins_;  // lowercase
};

// The origins a page served by a listener on `host`:`port` has.
std::vector<std::string> own_origins(std::string_view host, unsigned short port);

}  // namespace tenure
