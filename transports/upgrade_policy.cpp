#include "transports/upgrade_policy.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace tenure {
namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Compares every byte whatever the first difference, so that the time taken tells nothing of
// how much of a guessed token was right.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return difference == 0;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

UpgradePolicy::UpgradePolicy(std::string token, std::vector<std::string> origins)
    : token_(std::move(token)) {
  for (const std::string& origin : origins) origins_.push_back(lowercase(origin));
}

bool UpgradePolicy::origin_allowed(std::optional<std::string_view> origin) const {
  if (!origin) return true;
  std::string wanted = lowercase(trim(*origin));
  return std::find(origins_.begin(), origins_.end(), wanted) != origins_.end();
}

Credentials UpgradePolicy::credentials(std::optional<std::string_view> authorization) const {
  Principal self = ::geteuid();
  constexpr std::string_view kScheme = "bearer ";
  if (!authorization) {
    return {self, false,
            "mutations over WebSocket need Authorization: Bearer <token> on the "
            "upgrade request (the token is in <data-dir>/ws.token)"};
  }
  std::string_view value = trim(*authorization);
  bool bearer =
      value.size() > kScheme.size() && lowercase(value.substr(0, kScheme.size())) == kScheme;
  if (!bearer || token_.empty() || !same_secret(trim(value.substr(kScheme.size())), token_)) {
    return {self, false, "the upgrade request's bearer token is not the server's"};
  }
  return {self, true, std::nullopt};
}

std::vector<std::string> own_origins(std::string_view host, unsigned short port) {
  std::string suffix = port == 80 ? "" : ":" + std::to_string(port);
  std::string named =
      host.find(':') == std::string_view::npos ? std::string(host) : "[" + std::string(host) + "]";
  std::vector<std::string> origins{"http://" + named + suffix, "http://localhost" + suffix,
                                   "http://127.0.0.1" + suffix, "http://[::1]" + suffix};
  std::sort(origins.begin(), origins.end());
  origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
  return origins;
}

}  // namespace tenure
