#include "protocol/result.hpp"

#include <array>

namespace tenure::protocol {
namespace {

constexpr std::array<std::pair<std::string_view, client_errc>, 7> kServerCodes{{
    {"bad_request", client_errc::bad_request},
    {"frame_too_large", client_errc::frame_too_large},
    {"forbidden", client_errc::forbidden},
    {"unauthenticated", client_errc::unauthenticated},
    {"too_many_requests", client_errc::too_many_requests},
    {"unavailable", client_errc::unavailable},
    {"internal", client_errc::internal},
}};

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "tenure"; }
  std::string message(int value) const override {
    switch (static_cast<client_errc>(value)) {
      case client_errc::held:
        return "held";
      case client_errc::not_holder:
        return "not_holder";
      case client_errc::bad_request:
        return "bad_request";
      case client_errc::frame_too_large:
        return "frame_too_large";
      case client_errc::forbidden:
        return "forbidden";
      case client_errc::unauthenticated:
        return "unauthenticated";
      case client_errc::too_many_requests:
        return "too_many_requests";
      case client_errc::unavailable:
        return "unavailable";
      case client_errc::internal:
        return "internal";
      case client_errc::cannot_connect:
        return "cannot connect";
      case client_errc::disconnected:
        return "disconnected";
      case client_errc::timeout:
        return "timeout";
      case client_errc::malformed_reply:
        return "malformed reply";
      case client_errc::compacted:
        return "compacted";
      case client_errc::closed:
        return "closed";
      case client_errc::invalid_argument:
        return "invalid argument";
    }
    return "unknown";
  }
};

}  // namespace

const std::error_category& client_category() {
  static const Category category;
  return category;
}

std::error_code make_error_code(client_errc e) { return {static_cast<int>(e), client_category()}; }

client_errc from_server_code(std::string_view code) {
  for (const auto& [name, value] : kServerCodes) {
    if (name == code) return value;
  }
  return client_errc::internal;
}

}  // namespace tenure::protocol
