#include "apps/tenure/output.hpp"

#include <algorithm>

#include "apps/tenure/human_time.hpp"
#include "core/duration.hpp"

namespace tenure::cli {
namespace {

std::string text(Fields f, std::string_view name) {
  return std::string(string_field(f, name).value_or("?"));
}

std::string token_text(Fields f, std::string_view name = "token") {
  auto token = uint_field(f, name);
  return token ? std::to_string(*token) : "-";
}

// " (by uid:0: REASON)" when a revoke names who or why (contract 1.1), else "".
std::string revoke_note(Fields f, std::string_view by_field) {
  auto by = string_field(f, by_field);
  auto reason = string_field(f, "reason");
  bool has_reason = reason && !reason->empty();
  if (!by && !has_reason) return "";
  std::string note = by ? "by " + std::string(*by) : "";
  if (has_reason) note += (by ? ": " : "") + std::string(*reason);
  return " (" + note + ")";
}

std::string expiry(Fields f) { return describe_expiry(time_field(f, "expires_at"), wall_now()); }

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    if (!out.empty()) out += '\n';
    for (std::size_t c = 0; c < row.size(); ++c) {
      out += row[c];
      // The last column is not padded, so lines carry no trailing blanks.
      if (c + 1 < row.size()) out.append(width[c] - row[c].size() + 2, ' ');
    }
  };
  emit(header);
  for (const auto& row : rows) emit(row);
  return out;
}

// Strings unquoted; durations (*_ms) also in readable form.
std::string scalar_text(std::string_view name, simdjson::dom::element value) {
  std::string_view s;
  if (value.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  std::int64_t ms = 0;
  if (name.ends_with("_ms") && value.get_int64().get(ms) == simdjson::SUCCESS) {
    return std::to_string(ms) + " (" + format_duration(ms) + ")";
  }
  return simdjson::to_string(value);
}

// A "name: value" line; an object as "name:" with its fields indented below.
void append_field_lines(std::string& out, std::string_view name, simdjson::dom::element value,
                        const std::string& indent) {
  if (!out.empty()) out += '\n';
  out += indent + std::string(name) + ":";
  Fields nested;
  if (value.get_object().get(nested) != simdjson::SUCCESS) {
    out += " " + scalar_text(name, value);
    return;
  }
  for (auto [field, field_value] : nested)
    append_field_lines(out, field, field_value, indent + "  ");
}

}  // namespace

std::string describe_acquired(Fields reply) {
  if (!bool_field(reply, "fresh").value_or(true)) {
    return text(reply, "key") + " was already yours (" + text(reply, "owner") + "), token " +
           token_text(reply) + "; renewed, " + expiry(reply);
  }
  return "acquired " + text(reply, "key") + " as " + text(reply, "owner") + ", token " +
         token_text(reply) + ", " + expiry(reply);
}

std::string describe_renewed(Fields reply) {
  return "renewed " + text(reply, "key") + ", token " + token_text(reply) + ", " + expiry(reply);
}

std::string describe_keepalive(Fields reply) {
  auto count = uint_field(reply, "count").value_or(0);
  return "renewed " + std::to_string(count) + (count == 1 ? " lease" : " leases");
}

std::string describe_released(Fields reply) {
  if (!uint_field(reply, "token")) return "released " + text(reply, "key") + " (it was not held)";
  return "released " + text(reply, "key") + ", token " + token_text(reply);
}

std::string describe_revoked(Fields reply) {
  return "revoked " + text(reply, "key") + ", token " + token_text(reply);
}

std::string describe_valid(Fields reply, std::string_view key, std::uint64_t token) {
  return "token " + std::to_string(token) + " is valid for " + std::string(key) + ", " +
         expiry(reply);
}

std::string describe_get(Fields reply) {
  Millis now = wall_now();
  std::string out = text(reply, "key");
  if (auto lease = object_field(reply, "lease")) {
    out += " is held by " + text(*lease, "owner") + ", token " + token_text(*lease);
    if (auto acquired = time_field(*lease, "acquired_at")) {
      out += ", acquired " + relative_time(*acquired, now);
    }
    out += ", " + describe_expiry(time_field(*lease, "expires_at"), now);
  } else if (auto until = time_field(reply, "lock_delay_until"); until && *until > now) {
    out += " is in lock-delay after token " + token_text(reply, "last_token") +
           " was lost: nobody may take it until " + local_time(*until, now) + " (" +
           relative_time(*until, now) + ")";
  } else {
    out += " is free (last token " + token_text(reply, "last_token") + ")";
  }
  if (auto waiters = uint_field(reply, "waiters").value_or(0)) {
    out += ", " + std::to_string(waiters) + (waiters == 1 ? " waiter" : " waiters");
  }
  // The first waiters in queue order, when the server lists them (contract 1.1).
  if (auto waiting = array_field(reply, "waiting")) {
    std::size_t place = 0;
    for (auto item : *waiting) {
      Fields waiter;
      if (item.get_object().get(waiter) != simdjson::SUCCESS) continue;
      out += "\n  " + std::to_string(++place) + ". " + text(waiter, "owner");
      if (auto since = time_field(waiter, "since")) {
        out += ", waiting since " + local_time(*since, now);
      }
    }
  }
  return out;
}

std::string describe_stats(Fields reply) {
  std::string out;
  for (auto [name, value] : reply) {
    if (name == "id" || name == "status") continue;  // the envelope, not statistics
    append_field_lines(out, name, value, "");
  }
  return out;
}

std::string describe_conflict(Fields reply) {
  std::string key = text(reply, "key");
  if (string_field(reply, "status") == "held") {
    auto retry = uint_field(reply, "retry_after_ms");
    return describe_held({.key = key,
                          .reason = string_field(reply, "reason").value_or(""),
                          .holder = string_field(reply, "holder"),
                          .token = uint_field(reply, "token"),
                          .retry_after_ms = retry ? std::optional<Millis>(*retry) : std::nullopt,
                          .expires_at = time_field(reply, "expires_at")});
  }
  std::string reason(string_field(reply, "reason").value_or("unknown"));
  std::replace(reason.begin(), reason.end(), '_', ' ');
  std::string out = "not holder of " + key + " (" + reason;
  if (auto holder = string_field(reply, "holder")) {
    out += "; holder " + std::string(*holder) + ", token " + token_text(reply);
  }
  return out + ")";
}

std::string describe_held(const HeldKey& held) {
  std::string token = held.token ? std::to_string(*held.token) : "-";
  if (held.reason == "lock_delay") {
    return held.key + " is in lock-delay after token " + token + " was lost; retry in " +
           format_duration(held.retry_after_ms.value_or(0));
  }
  return held.key + " is held by " + std::string(held.holder.value_or("?")) + ", token " + token +
         ", " + describe_expiry(held.expires_at, wall_now());
}

std::string describe_error(Fields reply) {
  return text(reply, "error") + ": " + std::string(string_field(reply, "message").value_or(""));
}

std::string describe_event(Fields event) {
  Millis now = wall_now();
  auto at = time_field(event, "at");
  std::string type = text(event, "event");
  std::string out = (at ? local_time(*at, now) : "?") + " #" + token_text(event, "revision") + " " +
                    type + " " + text(event, "key") + " by " + text(event, "owner") + ", token " +
                    token_text(event);
  // Only for events that set a deadline; after an end it would be noise.
  auto expires = time_field(event, "expires_at");
  if (expires && (type == "acquired" || type == "renewed")) {
    out += ", expires " + local_time(*expires, now);
  }
  return out + revoke_note(event, "by");
}

std::string lease_table(const std::vector<Fields>& leases) {
  Millis now = wall_now();
  std::vector<std::vector<std::string>> rows;
  for (Fields lease : leases) {
    auto expires = time_field(lease, "expires_at");
    rows.push_back({text(lease, "key"), text(lease, "owner"), token_text(lease),
                    expires ? relative_time(*expires, now) + " (" + local_time(*expires, now) + ")"
                            : "never"});
  }
  return table({"KEY", "OWNER", "TOKEN", "EXPIRES"}, rows);
}

std::string history_table(const std::vector<Fields>& tenures) {
  Millis now = wall_now();
  auto when = [now](std::optional<Millis> t) { return t ? local_time(*t, now) : "-"; };
  std::vector<std::vector<std::string>> rows;
  for (Fields tenure : tenures) {
    rows.push_back({token_text(tenure), text(tenure, "owner"),
                    when(time_field(tenure, "acquired_at")), when(time_field(tenure, "ended_at")),
                    std::string(string_field(tenure, "end").value_or("live")) +
                        revoke_note(tenure, "revoked_by")});
  }
  return table({"TOKEN", "OWNER", "ACQUIRED", "ENDED", "END"}, rows);
}

}  // namespace tenure::cli
