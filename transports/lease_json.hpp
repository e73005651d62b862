#pragma once
// The lease object of §3 and the times in it, shared by replies and events.
#include <optional>
#include <string_view>

#include "core/json_writer.hpp"
#include "core/lease.hpp"

namespace tenure {

// An RFC 3339 time, or null where there is none.
void write_time(JsonWriter& w, std::string_view name, std::optional<Millis> t);

// The lease's fields into the object being written (acquire and renew flatten them).
void write_lease_fields(JsonWriter& w, std::string_view key, const Lease& lease);

// The lease as an object of its own, or null.
void write_lease(JsonWriter& w, std::string_view name, std::string_view key,
                 const std::optional<Lease>& lease);

}  // namespace tenure
