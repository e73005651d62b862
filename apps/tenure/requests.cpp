#include "apps/tenure/requests.hpp"

#include "core/json_writer.hpp"

namespace tenure::cli {
namespace {

// Writes {"id":ID,"op":OP, ...fields...} into a string; add() then finish().
class Request {
 public:
  Request(RequestId id, std::string_view op) : json_(line_) {
    json_.begin_object().field("id", static_cast<std::uint64_t>(id)).field("op", op);
  }

  template <typename T>
  Request& add(std::string_view name, const T& value) {
    json_.field(name, value);
    return *this;
  }
  template <typename T>
  Request& add(std::string_view name, const std::optional<T>& value) {
    if (value) json_.field(name, *value);
    return *this;
  }
  Request& add_raw(std::string_view name, const std::optional<std::string>& json) {
    if (json) json_.key(name).raw(*json);
    return *this;
  }

  std::string finish() {
    json_.end_object();
    return std::move(line_);
  }

 private:
  std::string line_;
  JsonWriter json_;
};

}  // namespace

std::string acquire_request(RequestId id, const AcquireParams& p) {
  Request r(id, "acquire");
  r.add("key", p.key).add("owner", p.owner).add("ttl_ms", p.ttl).add("wait_ms", p.wait);
  r.add("lock_delay_ms", p.lock_delay);
  if (p.open_ended) r.add("open_ended", true);
  if (p.release_on_disconnect) r.add("release_on_disconnect", true);
  return r.finish();
}

std::string renew_request(RequestId id, std::string_view key, std::string_view owner,
                          std::optional<Millis> ttl, std::optional<Token> token) {
  return Request(id, "renew")
      .add("key", key)
      .add("owner", owner)
      .add("ttl_ms", ttl)
      .add("token", token)
      .finish();
}

std::string release_request(RequestId id, std::string_view key, std::string_view owner,
                            std::optional<Token> token) {
  return Request(id, "release").add("key", key).add("owner", owner).add("token", token).finish();
}

std::string keepalive_request(RequestId id, std::string_view owner, std::optional<Millis> ttl) {
  return Request(id, "keepalive").add("owner", owner).add("ttl_ms", ttl).finish();
}

std::string check_request(RequestId id, std::string_view key, Token token,
                          const std::optional<std::string>& owner) {
  return Request(id, "check").add("key", key).add("token", token).add("owner", owner).finish();
}

std::string get_request(RequestId id, std::string_view key) {
  return Request(id, "get").add("key", key).finish();
}

std::string revoke_request(RequestId id, std::string_view key,
                           const std::optional<std::string>& reason) {
  return Request(id, "revoke").add("key", key).add("reason", reason).finish();
}

std::string watch_request(RequestId id, const std::optional<std::string>& prefix,
                          const std::optional<std::string>& key,
                          std::optional<std::uint64_t> from_revision) {
  return Request(id, "watch")
      .add("prefix", prefix)
      .add("key", key)
      .add("from_revision", from_revision)
      .finish();
}

std::string bare_request(RequestId id, std::string_view op) { return Request(id, op).finish(); }

std::string list_request(RequestId id, const std::optional<std::string>& prefix,
                         std::optional<std::uint64_t> limit,
                         const std::optional<std::string>& cursor) {
  return Request(id, "list")
      .add("prefix", prefix)
      .add("limit", limit)
      .add_raw("after", cursor)
      .finish();
}

std::string history_request(RequestId id, std::string_view key, std::optional<std::uint64_t> limit,
                            const std::optional<std::string>& cursor) {
  return Request(id, "history")
      .add("key", key)
      .add("limit", limit)
      .add_raw("before_token", cursor)
      .finish();
}

}  // namespace tenure::cli
