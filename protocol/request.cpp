#include "protocol/request.hpp"

#include "core/json_writer.hpp"

namespace tenure::protocol {
namespace {

// Calls visit(field, value) for every field the request sets.
template <typename Visit>
void for_each_set(const Request& r, Visit&& visit) {
  auto opt = [&](Field f, const auto& value) {
    if (value) visit(f, *value);
  };
  opt(Field::key, r.key);
  opt(Field::owner, r.owner);
  opt(Field::ttl_ms, r.ttl_ms);
  if (r.open_ended) visit(Field::open_ended, true);
  opt(Field::wait_ms, r.wait_ms);
  if (r.release_on_disconnect) visit(Field::release_on_disconnect, true);
  opt(Field::lock_delay_ms, r.lock_delay_ms);
  opt(Field::token, r.token);
  opt(Field::prefix, r.prefix);
  opt(Field::limit, r.limit);
  opt(Field::after, r.after);
  opt(Field::before_token, r.before_token);
  opt(Field::from_revision, r.from_revision);
  opt(Field::watch_id, r.watch_id);
  opt(Field::reason, r.reason);
}

}  // namespace

std::optional<Field> undefined_field(const Request& request) {
  std::optional<Field> bad;
  for_each_set(request, [&](Field f, const auto&) {
    if (!bad && !defines(request.op, f)) bad = f;
  });
  return bad;
}

std::string format(std::uint64_t id, const Request& request) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().field("id", id).field("op", to_string(request.op));
  for_each_set(request, [&](Field f, const auto& value) { w.field(to_string(f), value); });
  w.end_object();
  return out;
}

}  // namespace tenure::protocol
