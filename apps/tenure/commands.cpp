#include "apps/tenure/commands.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include "apps/tenure/failure.hpp"
#include "apps/tenure/output.hpp"
#include "apps/tenure/owner.hpp"
#include "apps/tenure/take_lease.hpp"
#include "core/json_writer.hpp"

namespace tenure::cli {
namespace {

using Steady = std::chrono::steady_clock;
using PageRequest =
    std::function<std::string(RequestId id, const std::optional<std::string>& cursor)>;
using Table = std::string (*)(const std::vector<Fields>&);

// The page's `next` as raw JSON, or empty on the last page.
std::optional<std::string> next_cursor(const Message& page) {
  simdjson::dom::element next;
  if (page.fields()["next"].get(next) != simdjson::SUCCESS || next.is_null()) return std::nullopt;
  return simdjson::to_string(next);
}

// Reads one page, or every page when `all_pages`, and prints the `items` arrays of all pages as
// one table (with --json: each page's reply line as it comes).
int paged_read(const Globals& g, bool all_pages, std::string_view items, const PageRequest& build,
               Table table, std::optional<std::string> cursor) {
  Session session(g);
  std::vector<Message> pages;
  do {
    Message page = session.call([&](RequestId id) { return build(id, cursor); }, Resend::safe);
    // Not "ok", so report() only explains the failure and needs no describer.
    if (page.status() != "ok") return report(g, page, "ok", nullptr);
    if (g.json) std::cout << page.line() << '\n';
    cursor = next_cursor(page);
    pages.push_back(std::move(page));
  } while (all_pages && cursor);
  if (g.json) return kExitOk;
  std::vector<Fields> rows;
  for (const Message& page : pages) {
    auto array = array_field(page.fields(), items);
    if (!array) continue;
    for (auto item : *array) {
      Fields row;
      if (item.get_object().get(row) == simdjson::SUCCESS) rows.push_back(row);
    }
  }
  std::cout << table(rows) << '\n';
  return kExitOk;
}

std::optional<Millis> granted_ttl(const Message& reply) {
  auto ttl = uint_field(reply.fields(), "ttl_ms");
  return ttl ? std::optional<Millis>(static_cast<Millis>(*ttl)) : std::nullopt;
}

}  // namespace

int acquire_command(const Globals& g, const OptionalText& owner, AcquireParams params) {
  params.owner = owner_or_fresh(owner);
  Session session(g, params.wait);
  // Repeated on another node (by the same owner, it gets the same tenure: §3), with what is left
  // of the wait.
  std::optional<Steady::time_point> wait_until;
  if (params.wait) wait_until = Steady::now() + std::chrono::milliseconds(*params.wait);
  Message reply = session.call(
      [&](RequestId id) {
        if (wait_until) params.wait = left_until(*wait_until);
        return acquire_request(id, params);
      },
      Resend::safe);
  warn_if_clamped(granted_ttl(reply), params.ttl, "--ttl");
  return report(g, reply, "acquired", describe_acquired);
}

int renew_command(const Globals& g, const std::string& key, const OptionalText& owner,
                  std::optional<Millis> ttl, std::optional<Token> token) {
  std::string who = required_owner(owner, "renew");
  Message reply = Session(g).call(
      [&](RequestId id) { return renew_request(id, key, who, ttl, token); }, Resend::safe);
  warn_if_clamped(granted_ttl(reply), ttl, "--ttl");
  return report(g, reply, "renewed", describe_renewed);
}

int release_command(const Globals& g, const std::string& key, const OptionalText& owner,
                    std::optional<Token> token) {
  std::string who = required_owner(owner, "release");
  Message reply = Session(g).call(
      [&](RequestId id) { return release_request(id, key, who, token); }, Resend::safe);
  return report(g, reply, "released", describe_released);
}

int keepalive_command(const Globals& g, const OptionalText& owner, std::optional<Millis> ttl) {
  std::string who = required_owner(owner, "keepalive");
  Message reply =
      Session(g).call([&](RequestId id) { return keepalive_request(id, who, ttl); }, Resend::safe);
  return report(g, reply, "renewed", describe_keepalive);
}

int check_command(const Globals& g, const std::string& key, Token token,
                  const OptionalText& owner) {
  Message reply = Session(g).call(
      [&](RequestId id) { return check_request(id, key, token, owner); }, Resend::safe);
  return report(g, reply, "valid", [&](Fields f) { return describe_valid(f, key, token); });
}

int get_command(const Globals& g, const std::string& key) {
  Message reply = Session(g).call([&](RequestId id) { return get_request(id, key); }, Resend::safe);
  return report(g, reply, "ok", describe_get);
}

int list_command(const Globals& g, const OptionalText& prefix, std::optional<std::uint64_t> limit,
                 const OptionalText& after) {
  std::optional<std::string> cursor;
  if (after) append_json_string(cursor.emplace(), *after);
  return paged_read(
      g, !limit, "leases",
      [&](RequestId id, const auto& cursor) { return list_request(id, prefix, limit, cursor); },
      lease_table, cursor);
}

int history_command(const Globals& g, const std::string& key, std::optional<std::uint64_t> limit,
                    std::optional<Token> before) {
  std::optional<std::string> cursor;
  if (before) cursor = std::to_string(*before);
  return paged_read(
      g, !limit, "tenures",
      [&](RequestId id, const auto& cursor) { return history_request(id, key, limit, cursor); },
      history_table, cursor);
}

int revoke_command(const Globals& g, const std::string& key, const OptionalText& reason) {
  // Not repeated: had the first ended the tenure, a repeat would end the next one.
  Message reply =
      Session(g).call([&](RequestId id) { return revoke_request(id, key, reason); }, Resend::never);
  return report(g, reply, "revoked", describe_revoked);
}

int stats_command(const Globals& g) {
  Message reply =
      Session(g).call([](RequestId id) { return bare_request(id, "stats"); }, Resend::safe);
  return report(g, reply, "ok", describe_stats);
}

int ping_command(const Globals& g) {
  Session session(g);
  auto start = std::chrono::steady_clock::now();
  Message reply = session.call([](RequestId id) { return bare_request(id, "ping"); }, Resend::safe);
  std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
  return report(g, reply, "pong", [&](Fields) {
    char line[48];
    std::snprintf(line, sizeof line, "pong in %.3f ms", elapsed.count());
    return std::string(line);
  });
}

}  // namespace tenure::cli
