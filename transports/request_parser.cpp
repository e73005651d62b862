#include "transports/request_parser.hpp"

#include <algorithm>
#include <utility>

#include "transports/field_checks.hpp"

namespace tenure {
namespace {

constexpr std::uint64_t kDefaultPageSize = 100;
constexpr std::uint64_t kMaxPageSize = 10'000;

std::size_t page_size(FieldChecks& in) {
  return std::min(in.optional_positive(Field::limit).value_or(kDefaultPageSize), kMaxPageSize);
}

RequestBody acquire(FieldChecks& in) {
  AcquireRequest r;
  r.key = in.key();
  r.params.owner = in.owner();
  r.params.ttl_ms = in.positive_millis(Field::ttl_ms);
  r.params.open_ended = in.flag(Field::open_ended);
  r.params.release_on_disconnect = in.flag(Field::release_on_disconnect);
  r.params.lock_delay_ms = in.millis(Field::lock_delay_ms);
  r.wait_ms = in.millis(Field::wait_ms);
  if (r.params.open_ended && r.params.ttl_ms) {
    in.fail("ttl_ms contradicts open_ended: an open-ended lease has no ttl");
  }
  return r;
}

RequestBody renew(FieldChecks& in) {
  RenewRequest r;
  r.key = in.key();
  r.holder.owner = in.owner();
  r.holder.token = in.optional_unsigned(Field::token);
  r.ttl_ms = in.positive_millis(Field::ttl_ms);
  return r;
}

RequestBody release(FieldChecks& in) {
  ReleaseRequest r;
  r.key = in.key();
  r.holder.owner = in.owner();
  r.holder.token = in.optional_unsigned(Field::token);
  return r;
}

RequestBody keepalive(FieldChecks& in) {
  KeepaliveRequest r;
  r.owner = in.owner();
  r.ttl_ms = in.positive_millis(Field::ttl_ms);
  return r;
}

RequestBody check(FieldChecks& in) {
  CheckRequest r;
  r.key = in.key();
  r.token = in.required_unsigned(Field::token);
  r.owner = in.optional_owner();
  return r;
}

RequestBody get(FieldChecks& in) {
  GetRequest r;
  r.key = in.key();
  return r;
}

RequestBody list(FieldChecks& in) {
  ListRequest r;
  r.prefix = in.optional_string(Field::prefix).value_or(std::string());
  r.after = in.optional_string(Field::after).value_or(std::string());
  r.limit = page_size(in);
  return r;
}

RequestBody history(FieldChecks& in) {
  HistoryRequest r;
  r.key = in.key();
  r.limit = page_size(in);
  r.before_token = in.optional_positive(Field::before_token).value_or(0);
  return r;
}

RequestBody revoke(FieldChecks& in) {
  RevokeRequest r;
  r.key = in.key();
  r.reason = in.optional_string(Field::reason).value_or(std::string());
  return r;
}

RequestBody watch(FieldChecks& in) {
  WatchRequest r;
  r.key = in.optional_key();
  r.prefix = in.optional_string(Field::prefix).value_or(std::string());
  r.from_revision = in.optional_unsigned(Field::from_revision);
  if (r.key && in.present(Field::prefix)) in.fail("key contradicts prefix: watch one or the other");
  return r;
}

RequestBody unwatch(FieldChecks& in) {
  return UnwatchRequest{in.required_unsigned(Field::watch_id)};
}

RequestBody stats(FieldChecks&) { return StatsRequest{}; }
RequestBody ping(FieldChecks&) { return PingRequest{}; }

RequestBody backup(FieldChecks& in) {
  BackupRequest r;
  r.dir = in.optional_string(Field::dir).value_or(std::string());
  if (!in.error() && (r.dir.empty() || r.dir.front() != '/')) {
    in.fail("dir is required: an absolute path on the server's machine that does not exist yet");
  }
  return r;
}

using Builder = RequestBody (*)(FieldChecks&);

constexpr std::pair<std::string_view, Builder> kOps[] = {
    {"acquire", acquire}, {"renew", renew},  {"release", release}, {"keepalive", keepalive},
    {"check", check},     {"get", get},      {"list", list},       {"history", history},
    {"revoke", revoke},   {"watch", watch},  {"unwatch", unwatch}, {"stats", stats},
    {"ping", ping},       {"backup", backup}};

// Every op takes an id, checked by the parser.
void present_id(FieldChecks& in) { in.present(Field::id); }

Error bad_request(std::string message) { return Error{errc::bad_request, std::move(message)}; }

std::string in_quotes(std::string_view name) { return "\"" + std::string(name) + "\""; }

std::variant<RequestBody, Error> build(const Fields& fields, const FieldReader& reader) {
  // A field given twice has no one value to take (§2).
  if (reader.repeated())
    return bad_request("field " + in_quotes(*reader.repeated()) + " is given twice");
  FieldChecks in(fields);
  auto op = in.optional_string(Field::op);
  if (in.error()) return *in.error();
  if (!op) return bad_request("op is required");
  auto known = std::find_if(std::begin(kOps), std::end(kOps),
                            [&](const auto& entry) { return entry.first == *op; });
  if (known == std::end(kOps)) return bad_request("op " + in_quotes(*op) + " is unknown");
  present_id(in);
  RequestBody body = known->second(in);
  // A field the op does not define is most likely a typo of one it does (`ttl` for `ttl_ms`):
  // refused before the op's own complaints, which it may explain.
  auto stray = reader.unknown();
  if (!stray) {
    if (auto unread = in.unread()) stray.emplace(to_string(*unread));
  }
  if (stray) return bad_request(*op + " has no field " + in_quotes(*stray));
  if (in.error()) return *in.error();
  return body;
}

}  // namespace

ParsedRequest RequestParser::parse(std::string_view line) {
  // The padding must be zeros: simdjson reads into it when an array or object is left open, and
  // a longer earlier line's bytes there would be taken for more of this one.
  padded_.assign(line);
  padded_.append(simdjson::SIMDJSON_PADDING, '\0');
  simdjson::padded_string_view json(padded_.data(), line.size(), padded_.size());
  if (auto problem = reader_.read(json, fields_)) return {{}, bad_request(std::move(*problem))};

  const FieldValue& id = fields_[static_cast<std::size_t>(Field::id)];
  if (!id.absent() && id.kind != FieldValue::Kind::string && id.kind != FieldValue::Kind::integer) {
    return {{}, bad_request("id must be a string or an integer")};
  }
  return {std::string(id.absent() ? std::string_view() : id.raw), build(fields_, reader_)};
}

RequestParser& thread_request_parser() {
  thread_local RequestParser parser;
  return parser;
}

}  // namespace tenure
