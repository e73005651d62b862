#include "core/errc.hpp"

namespace tenure {

std::string_view to_string(errc code) {
  switch (code) {
    case errc::bad_request:
      return "bad_request";
    case errc::frame_too_large:
      return "frame_too_large";
    case errc::forbidden:
      return "forbidden";
    case errc::unauthenticated:
      return "unauthenticated";
    case errc::too_many_requests:
      return "too_many_requests";
    case errc::unavailable:
      return "unavailable";
    case errc::internal:
      return "internal";
  }
  return "internal";
}

}  // namespace tenure
