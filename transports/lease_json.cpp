#include "transports/lease_json.hpp"

namespace tenure {

void write_time(JsonWriter& w, std::string_view name, std::optional<Millis> t) {
  w.key(name);
  if (t) {
    w.value(TimeText(*t).view());
  } else {
    w.null();
  }
}

void write_lease_fields(JsonWriter& w, std::string_view key, const Lease& lease) {
  w.field("key", key).field("owner", lease.owner).field("token", lease.token);
  write_time(w, "acquired_at", lease.acquired_at);
  write_time(w, "expires_at", lease.expires_at);
  w.key("ttl_ms");
  if (lease.open_ended()) {
    w.null();
  } else {
    w.value(lease.ttl_ms);
  }
}

void write_lease(JsonWriter& w, std::string_view name, std::string_view key,
                 const std::optional<Lease>& lease) {
  w.key(name);
  if (!lease) {
    w.null();
    return;
  }
  w.begin_object();
  write_lease_fields(w, key, *lease);
  w.end_object();
}

}  // namespace tenure
