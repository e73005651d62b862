#include "protocol/replies.hpp"

namespace tenure::protocol {
namespace {

Failure malformed(const Message& m) {
  return Failure(client_errc::malformed_reply,
                 "tenured sent a reply this client cannot read: " + m.line());
}

std::string str(Fields f, std::string_view name) {
  return std::string(string_field(f, name).value_or(""));
}

std::optional<std::string> opt_str(Fields f, std::string_view name) {
  auto s = string_field(f, name);
  return s ? std::optional<std::string>(*s) : std::nullopt;
}

// The reply's failure if any, else whether its status is `expected`.
template <typename T, typename Read>
Result<T> expect(const Message& m, std::string_view expected, Read&& read) {
  if (auto failure = reply_failure(m)) return *failure;
  if (m.status() != expected) return malformed(m);
  std::optional<T> value = read(m.fields());
  if (!value) return malformed(m);
  return std::move(*value);
}

bool fill_lease(Fields f, LeaseInfo& out) {
  auto token = uint_field(f, "token");
  auto key = string_field(f, "key");
  if (!token || !key) return false;
  out.key = std::string(*key);
  out.owner = str(f, "owner");
  out.token = *token;
  out.acquired_at = time_field(f, "acquired_at");
  out.expires_at = time_field(f, "expires_at");
  out.ttl_ms = int_field(f, "ttl_ms");
  return true;
}

}  // namespace

std::optional<Failure> reply_failure(const Message& m) {
  auto f = m.fields();
  std::string_view status = m.status();
  if (status == "error") {
    std::string code = str(f, "error");
    Failure failure(from_server_code(code), code + ": " + str(f, "message"));
    failure.line = m.line();
    return failure;
  }
  if (status != "held" && status != "not_holder") return std::nullopt;
  std::string key = str(f, "key");
  Failure failure(status == "held" ? client_errc::held : client_errc::not_holder, "");
  failure.line = m.line();
  failure.reason = str(f, "reason");
  failure.holder = opt_str(f, "holder");
  failure.token = uint_field(f, "token");
  failure.retry_after_ms = int_field(f, "retry_after_ms");
  failure.expires_at_ms = time_field(f, "expires_at");
  if (status == "held") {
    failure.message = failure.reason == "lock_delay"
                          ? key + " is in lock-delay"
                          : key + " is held by " + failure.holder.value_or("?");
  } else {
    failure.message = "not the holder of " + key + ": " + failure.reason;
  }
  if (failure.token) failure.message += " (token " + std::to_string(*failure.token) + ")";
  return failure;
}

std::optional<LeaseInfo> read_lease(Fields f) {
  LeaseInfo lease;
  if (!fill_lease(f, lease)) return std::nullopt;
  return lease;
}

Result<Acquired> read_acquired(const Message& m) {
  return expect<Acquired>(m, "acquired", [](Fields f) -> std::optional<Acquired> {
    Acquired a;
    if (!fill_lease(f, a)) return std::nullopt;
    a.fresh = bool_field(f, "fresh").value_or(true);
    a.revision = uint_field(f, "revision").value_or(0);
    return a;
  });
}

Result<Renewed> read_renewed(const Message& m) {
  return expect<Renewed>(m, "renewed", [](Fields f) -> std::optional<Renewed> {
    Renewed r;
    if (!fill_lease(f, r)) return std::nullopt;
    r.revision = uint_field(f, "revision").value_or(0);
    return r;
  });
}

Result<Released> read_released(const Message& m) {
  return expect<Released>(m, "released", [](Fields f) -> std::optional<Released> {
    return Released{str(f, "key"), uint_field(f, "token"), uint_field(f, "revision")};
  });
}

Result<KeepAlive> read_keepalive(const Message& m) {
  return expect<KeepAlive>(m, "renewed", [](Fields f) -> std::optional<KeepAlive> {
    auto count = uint_field(f, "count");
    if (!count) return std::nullopt;
    return KeepAlive{*count, uint_field(f, "revision").value_or(0)};
  });
}

Result<Valid> read_valid(const Message& m) {
  return expect<Valid>(m, "valid", [](Fields f) -> std::optional<Valid> {
    return Valid{time_field(f, "expires_at")};
  });
}

Result<KeyInfo> read_key_info(const Message& m) {
  return expect<KeyInfo>(m, "ok", [](Fields f) -> std::optional<KeyInfo> {
    KeyInfo k;
    k.key = str(f, "key");
    if (auto lease = object_field(f, "lease")) {
      k.lease = read_lease(*lease);
      if (!k.lease) return std::nullopt;
    }
    k.last_token = uint_field(f, "last_token").value_or(0);
    k.waiters = uint_field(f, "waiters").value_or(0);
    if (auto waiting = array_field(f, "waiting")) {
      for (auto item : *waiting) {
        Fields w;
        if (item.get_object().get(w) != simdjson::SUCCESS) return std::nullopt;
        k.waiting.push_back({str(w, "owner"), time_field(w, "since")});
      }
    }
    k.lock_delay_until = time_field(f, "lock_delay_until");
    return k;
  });
}

Result<LeasePage> read_lease_page(const Message& m) {
  return expect<LeasePage>(m, "ok", [](Fields f) -> std::optional<LeasePage> {
    LeasePage page;
    auto leases = array_field(f, "leases");
    if (!leases) return std::nullopt;
    for (auto item : *leases) {
      Fields l;
      if (item.get_object().get(l) != simdjson::SUCCESS) return std::nullopt;
      auto lease = read_lease(l);
      if (!lease) return std::nullopt;
      page.leases.push_back(std::move(*lease));
    }
    page.next = opt_str(f, "next");
    return page;
  });
}

Result<HistoryPage> read_history_page(const Message& m) {
  return expect<HistoryPage>(m, "ok", [](Fields f) -> std::optional<HistoryPage> {
    HistoryPage page;
    auto tenures = array_field(f, "tenures");
    if (!tenures) return std::nullopt;
    for (auto item : *tenures) {
      Fields t;
      if (item.get_object().get(t) != simdjson::SUCCESS) return std::nullopt;
      page.tenures.push_back({uint_field(t, "token").value_or(0), str(t, "owner"),
                              time_field(t, "acquired_at"), time_field(t, "ended_at"),
                              opt_str(t, "end"), opt_str(t, "revoked_by"), opt_str(t, "reason")});
    }
    page.next = uint_field(f, "next");
    return page;
  });
}

Result<Revoked> read_revoked(const Message& m) {
  return expect<Revoked>(m, "revoked", [](Fields f) -> std::optional<Revoked> {
    return Revoked{str(f, "key"), uint_field(f, "token").value_or(0),
                   uint_field(f, "revision").value_or(0)};
  });
}

Result<Stats> read_stats(const Message& m) {
  return expect<Stats>(m, "ok", [](Fields f) -> std::optional<Stats> {
    Stats s;
    s.version = str(f, "version");
    s.uptime_ms = uint_field(f, "uptime_ms").value_or(0);
    s.revision = uint_field(f, "revision").value_or(0);
    s.live_leases = uint_field(f, "live_leases").value_or(0);
    s.keys = uint_field(f, "keys").value_or(0);
    s.connections = uint_field(f, "connections").value_or(0);
    s.watchers = uint_field(f, "watchers").value_or(0);
    if (auto ops = object_field(f, "ops")) {
      for (auto [name, value] : *ops) {
        std::uint64_t n = 0;
        if (value.get_uint64().get(n) == simdjson::SUCCESS) s.ops[std::string(name)] = n;
      }
    }
    return s;
  });
}

Result<Done> read_pong(const Message& m) {
  return expect<Done>(m, "pong", [](Fields) -> std::optional<Done> { return Done{}; });
}

Result<Watching> read_watching(const Message& m) {
  return expect<Watching>(m, "watching", [&m](Fields f) -> std::optional<Watching> {
    auto id = uint_field(f, "watch_id");
    if (!id) return std::nullopt;
    return Watching{*id, uint_field(f, "revision").value_or(0), m.line()};
  });
}

Result<Done> read_unwatched(const Message& m) {
  return expect<Done>(m, "unwatched", [](Fields) -> std::optional<Done> { return Done{}; });
}

std::optional<Event> read_event(const Message& m) {
  auto f = m.fields();
  auto revision = uint_field(f, "revision");
  if (m.event().empty() || !revision) return std::nullopt;
  return Event{std::string(m.event()),
               uint_field(f, "watch_id").value_or(0),
               *revision,
               str(f, "key"),
               str(f, "owner"),
               uint_field(f, "token").value_or(0),
               time_field(f, "at"),
               time_field(f, "expires_at"),
               opt_str(f, "by"),
               opt_str(f, "reason"),
               m.line()};
}

std::optional<Lost> read_lost(const Message& m) {
  auto f = m.fields();
  auto token = uint_field(f, "token");
  if (m.event() != "lost" || !token) return std::nullopt;
  return Lost{str(f, "key"), *token, str(f, "reason")};
}

}  // namespace tenure::protocol
