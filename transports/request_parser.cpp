#include "transports/request_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "transports/field_checks.hpp"

namespace tenure {
namespace {

using protocol::Op;

// The builder of each op is the overload of `read` for its tag.
template <Op op>
using OpTag = std::integral_constant<Op, op>;

constexpr std::uint64_t kDefaultPageSize = 100;
constexpr std::uint64_t kMaxPageSize = 10'000;

std::size_t page_size(FieldChecks& in) {
  return std::min(in.optional_positive(Field::limit).value_or(kDefaultPageSize), kMaxPageSize);
}

AcquireRequest read(FieldChecks& in, OpTag<Op::acquire>) {
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

RenewRequest read(FieldChecks& in, OpTag<Op::renew>) {
  RenewRequest r;
  r.key = in.key();
  r.holder.owner = in.owner();
  r.holder.token = in.optional_unsigned(Field::token);
  r.ttl_ms = in.positive_millis(Field::ttl_ms);
  return r;
}

ReleaseRequest read(FieldChecks& in, OpTag<Op::release>) {
  ReleaseRequest r;
  r.key = in.key();
  r.holder.owner = in.owner();
  r.holder.token = in.optional_unsigned(Field::token);
  return r;
}

KeepaliveRequest read(FieldChecks& in, OpTag<Op::keepalive>) {
  KeepaliveRequest r;
  r.owner = in.owner();
  r.ttl_ms = in.positive_millis(Field::ttl_ms);
  return r;
}

CheckRequest read(FieldChecks& in, OpTag<Op::check>) {
  CheckRequest r;
  r.key = in.key();
  r.token = in.required_unsigned(Field::token);
  r.owner = in.optional_owner();
  return r;
}

GetRequest read(FieldChecks& in, OpTag<Op::get>) {
  GetRequest r;
  r.key = in.key();
  return r;
}

ListRequest read(FieldChecks& in, OpTag<Op::list>) {
  ListRequest r;
  r.prefix = in.optional_string(Field::prefix).value_or(std::string());
  r.after = in.optional_string(Field::after).value_or(std::string());
  r.limit = page_size(in);
  return r;
}

HistoryRequest read(FieldChecks& in, OpTag<Op::history>) {
  HistoryRequest r;
  r.key = in.key();
  r.limit = page_size(in);
  r.before_token = in.optional_positive(Field::before_token).value_or(0);
  return r;
}

RevokeRequest read(FieldChecks& in, OpTag<Op::revoke>) {
  RevokeRequest r;
  r.key = in.key();
  r.reason = in.optional_string(Field::reason).value_or(std::string());
  return r;
}

WatchRequest read(FieldChecks& in, OpTag<Op::watch>) {
  WatchRequest r;
  r.key = in.optional_key();
  r.prefix = in.optional_string(Field::prefix).value_or(std::string());
  r.from_revision = in.optional_unsigned(Field::from_revision);
  if (r.key && in.present(Field::prefix)) in.fail("key contradicts prefix: watch one or the other");
  return r;
}

UnwatchRequest read(FieldChecks& in, OpTag<Op::unwatch>) {
  return UnwatchRequest{in.required_unsigned(Field::watch_id)};
}

StatsRequest read(FieldChecks&, OpTag<Op::stats>) { return StatsRequest{}; }
PingRequest read(FieldChecks&, OpTag<Op::ping>) { return PingRequest{}; }

BackupRequest read(FieldChecks& in, OpTag<Op::backup>) {
  BackupRequest r;
  r.dir = in.optional_string(Field::dir).value_or(std::string());
  if (!in.error() && (r.dir.empty() || r.dir.front() != '/')) {
    in.fail("dir is required: an absolute path on the server's machine that does not exist yet");
  }
  return r;
}

// The op's builder, and its request as RequestBody's alternative of the op's index.
template <std::size_t... I>
RequestBody read_body(Op op, FieldChecks& in, std::index_sequence<I...>) {
  static_assert((std::is_same_v<decltype(read(in, OpTag<static_cast<Op>(I)>{})),
                                std::variant_alternative_t<I, RequestBody>> &&
                 ...),
                "RequestBody lists each op's request type in the order of protocol::Op");
  using Reader = RequestBody (*)(FieldChecks&);
  static constexpr Reader kReaders[] = {+[](FieldChecks& fields) {
    return RequestBody(std::in_place_index<I>, read(fields, OpTag<static_cast<Op>(I)>{}));
  }...};
  return kReaders[static_cast<std::size_t>(op)](in);
}

Error bad_request(std::string message) { return Error{errc::bad_request, std::move(message)}; }

std::string in_quotes(std::string_view name) { return "\"" + std::string(name) + "\""; }

// The first field given (not null) that `op` does not define: most likely a typo of one it does
// (`ttl` for `ttl_ms`).
std::optional<Field> undefined_field(Op op, const Fields& fields) {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    auto field = static_cast<Field>(i);
    if (field == Field::id || field == Field::op) continue;
    if (!fields[i].absent() && !protocol::defines(op, field)) return field;
  }
  return std::nullopt;
}

std::variant<RequestBody, Error> build(const Fields& fields, const FieldReader& reader,
                                       OwnerNames* owners) {
  // A field given twice has no one value to take (§2).
  if (reader.repeated())
    return bad_request("field " + in_quotes(*reader.repeated()) + " is given twice");
  FieldChecks in(fields, owners);
  auto name = in.optional_string(Field::op);
  if (in.error()) return *in.error();
  if (!name) return bad_request("op is required");
  auto op = protocol::parse_op(*name);
  if (!op) return bad_request("op " + in_quotes(*name) + " is unknown");
  RequestBody body = read_body(*op, in, std::make_index_sequence<protocol::kOpCount>());
  // A field the op does not define is refused before the op's own complaints, which it may
  // explain.
  auto stray = reader.unknown();
  if (!stray) {
    if (auto undefined = undefined_field(*op, fields)) stray.emplace(to_string(*undefined));
  }
  if (stray) return bad_request(*name + " has no field " + in_quotes(*stray));
  if (in.error()) return *in.error();
  return body;
}

}  // namespace

namespace {

bool within_64_bits(std::string_view text) {
  const char* end = text.data() + text.size();
  if (!text.empty() && text.front() == '-') {
    std::int64_t value = 0;
    auto [at, error] = std::from_chars(text.data(), end, value);
    return error == std::errc() && at == end;
  }
  std::uint64_t value = 0;
  auto [at, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && at == end;
}

}  // namespace

ParsedRequest RequestParser::parse(std::string_view line, OwnerNames* owners) {
  // The padding must be zeros: simdjson reads into it when an array or object is left open, and
  // a longer earlier line's bytes there would be taken for more of this one.
  padded_.assign(line);
  padded_.append(simdjson::SIMDJSON_PADDING, '\0');
  simdjson::padded_string_view json(padded_.data(), line.size(), padded_.size());
  auto problem = reader_.read(json, fields_);
  const FieldValue& id = fields_[static_cast<std::size_t>(Field::id)];
  // An integer id beyond 64 bits is valid JSON, but clients' parsers (simdjson's among them)
  // refuse it: it is not echoed.
  bool echoable = id.kind == FieldValue::Kind::string ||
                  (id.kind == FieldValue::Kind::integer && within_64_bits(id.raw));
  if (problem) {
    // Malformed past its id (too deep, a bad escape in a later field): the id is still echoed.
    return {echoable ? id.raw : std::string_view(), bad_request(std::move(*problem))};
  }
  if (!id.absent() && !echoable) {
    return {{}, bad_request("id must be a string or an integer of at most 64 bits")};
  }
  return {id.absent() ? std::string_view() : id.raw, build(fields_, reader_, owners)};
}

std::optional<std::pair<std::size_t, std::size_t>> RequestParser::id_span() const {
  const FieldValue& id = fields_[static_cast<std::size_t>(Field::id)];
  if (id.kind == FieldValue::Kind::absent) return std::nullopt;
  return std::pair<std::size_t, std::size_t>(id.raw.data() - padded_.data(), id.raw.size());
}

RequestParser& thread_request_parser() {
  thread_local RequestParser parser;
  return parser;
}

}  // namespace tenure
