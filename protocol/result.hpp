#pragma once
// What a call returns: its value, or a Failure naming what went wrong. Failures are values, not
// exceptions: `held` and `not_holder` are part of normal coordination, and so is a daemon that
// is not running.
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace tenure::protocol {

enum class client_errc {
  // Statuses of normal coordination.
  held = 1,
  not_holder,
  // The server's error codes (§3).
  bad_request,
  frame_too_large,
  forbidden,
  unauthenticated,
  too_many_requests,
  unavailable,
  internal,
  // The client's own.
  cannot_connect,
  disconnected,
  timeout,
  malformed_reply,
  compacted,
  closed,
  invalid_argument,
};

const std::error_category& client_category();
std::error_code make_error_code(client_errc e);

// The server's error code ("forbidden") as a client_errc; internal for one we do not know.
client_errc from_server_code(std::string_view code);

struct Failure {
  std::error_code code;
  std::string message;  // the server's, or ours naming the problem
  // held / not_holder: the server's reason ("held_by_other", "lock_delay", …), the current
  // holder and token when there is one.
  std::string reason;
  std::optional<std::string> holder;
  std::optional<std::uint64_t> token;
  std::optional<std::int64_t> retry_after_ms;
  std::optional<std::int64_t> expires_at_ms;  // held: when the holder's lease ends (Unix ms)
  // The server's reply or event as it sent it, when the failure is one (`--json` prints it).
  std::string line;

  Failure() = default;
  Failure(client_errc e, std::string text) : code(make_error_code(e)), message(std::move(text)) {}
  bool is(client_errc e) const { return code == make_error_code(e); }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Failure failure) : v_(std::move(failure)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  // REQUIRES: ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  // REQUIRES: !ok().
  const Failure& error() const { return std::get<1>(v_); }
  std::error_code code() const { return ok() ? std::error_code{} : error().code; }

 private:
  std::variant<T, Failure> v_;
};

struct Done {};  // the value of a call with nothing to return

}  // namespace tenure::protocol

template <>
struct std::is_error_code_enum<tenure::protocol::client_errc> : std::true_type {};
