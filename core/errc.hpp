#pragma once
// Error codes of the wire contract (§3). Every failed request maps to one of these.
#include <string>
#include <string_view>

namespace tenure {

enum class errc {
  bad_request,
  frame_too_large,
  forbidden,
  unauthenticated,
  too_many_requests,
  unavailable,
  internal,
};

std::string_view to_string(errc code);

struct Error {
  errc code;
  std::string message;
};

}  // namespace tenure
