#include "transports/peer_wire.hpp"

#include <simdjson.h>

#include <algorithm>
#include <charconv>

#include "core/json_writer.hpp"

namespace tenure {
namespace {

namespace od = simdjson::ondemand;

constexpr std::string_view kReplyPrefix = R"({"id":)";
constexpr std::string_view kNoticePrefix = R"({"via_conn":)";

void write_via(JsonWriter& w, const Via& via) {
  w.key("via").begin_object().field("node", via.node).field("conn", std::uint64_t{via.conn});
  w.field("uid", std::uint64_t{via.uid}).field("admin", via.admin).end_object();
}

// The unsigned integer at the start of `text`, and the rest after it.
std::optional<std::pair<std::uint64_t, std::string_view>> leading_number(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, problem] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (problem != std::errc() || end == text.data()) return std::nullopt;
  return std::pair{value, text.substr(end - text.data())};
}

simdjson::padded_string padded(std::string_view line) { return simdjson::padded_string(line); }

}  // namespace

void format_peer_hello(std::string& out, std::string_view node, std::string_view secret) {
  JsonWriter w(out);
  w.begin_object().field("op", "peer_hello").field("node", node).field("secret", secret);
  w.end_object();
}

std::optional<PeerHello> parse_peer_hello(std::string_view line) {
  od::parser parser;
  auto json = padded(line);
  od::document doc;
  if (parser.iterate(json).get(doc)) return std::nullopt;
  std::string_view op, node, secret;
  od::object object;
  if (doc.get_object().get(object)) return std::nullopt;
  for (auto field : object) {
    std::string_view name;
    if (field.unescaped_key().get(name)) return std::nullopt;
    std::string_view* into = name == "op"       ? &op
                             : name == "node"   ? &node
                             : name == "secret" ? &secret
                                                : nullptr;
    if (into == nullptr || field.value().get_string().get(*into)) return std::nullopt;
  }
  if (op != "peer_hello" || node.empty()) return std::nullopt;
  return PeerHello{std::string(node), std::string(secret)};
}

void format_forwarded(std::string& out, const Via& via, std::uint64_t link_id,
                      std::string_view line, std::optional<IdSpan> id) {
  std::size_t start = out.size();
  std::size_t open = line.find('{');  // a valid request is an object
  JsonWriter w(out);
  w.begin_object();
  write_via(w, via);
  out.push_back(',');
  if (id) {
    out.append(line.substr(open + 1, id->first - open - 1));
    out.append(std::to_string(link_id));
    out.append(line.substr(id->first + id->second));
  } else {
    // A valid request has members besides the id: its op at least.
    out.append(kReplyPrefix.substr(1)).append(std::to_string(link_id)).push_back(',');
    out.append(line.substr(open + 1));
  }
  // A WebSocket message may span lines. Valid JSON has a newline only as whitespace (one in a
  // string is escaped), so a space does as well, and the link's lines stay lines.
  std::replace(out.begin() + static_cast<std::ptrdiff_t>(start), out.end(), '\n', ' ');
}

void format_peer_disconnect(std::string& out, const Via& via) {
  JsonWriter w(out);
  w.begin_object();
  write_via(w, via);
  w.field("op", "peer_disconnect").end_object();
}

namespace {
constexpr std::string_view kNoticeMoved = "notice_moved";
constexpr std::string_view kUnowned = "unowned";
}  // namespace

void format_peer_notice(std::string& out, PeerNotice notice, std::string_view key,
                        std::uint64_t token) {
  JsonWriter w(out);
  w.begin_object().field("event", notice == PeerNotice::moved ? kNoticeMoved : kUnowned);
  w.field("key", key).field("token", token).end_object();
}

std::optional<PeerNotice> parse_peer_notice(std::string_view message, std::string& key,
                                            std::uint64_t& token) {
  std::optional<PeerNotice> notice;
  if (message.starts_with(R"({"event":"notice_moved")")) notice = PeerNotice::moved;
  if (message.starts_with(R"({"event":"unowned")")) notice = PeerNotice::unowned;
  if (!notice) return std::nullopt;
  od::parser parser;
  auto json = padded(message);
  od::document doc;
  std::string_view said;
  if (parser.iterate(json).get(doc) || doc["key"].get_string().get(said) ||
      doc["token"].get_uint64().get(token)) {
    return std::nullopt;
  }
  key.assign(said);
  return notice;
}

std::variant<PeerRequest, std::string> parse_forwarded(std::string_view line) {
  od::parser parser;
  auto json = padded(line);
  od::document doc;
  od::object object;
  if (parser.iterate(json).get(doc) || doc.get_object().get(object)) {
    return std::string("a peer request is a JSON object");
  }
  od::object via_object;
  std::string_view via_text;
  bool has_via = false;
  // Only the first member is read here: the rest is the request, the proxy's to parse.
  for (auto field : object) {
    std::string_view name;
    has_via = !field.unescaped_key().get(name) && name == "via" &&
              !field.value().get_object().get(via_object) && !via_object.raw_json().get(via_text);
    break;
  }
  if (!has_via) return std::string("a peer request starts with via");
  PeerRequest request;
  {
    od::parser via_parser;
    auto via_json = padded(via_text);
    od::document via_doc;
    od::object fields;
    if (via_parser.iterate(via_json).get(via_doc) || via_doc.get_object().get(fields)) {
      return std::string("via is not an object");
    }
    for (auto field : fields) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return std::string("via is malformed");
      bool bad = false;
      if (key == "node") {
        std::string_view node;
        bad = field.value().get_string().get(node) != simdjson::SUCCESS;
        request.via.node = node;
      } else if (key == "conn") {
        bad = field.value().get_uint64().get(request.via.conn) != simdjson::SUCCESS;
      } else if (key == "uid") {
        std::uint64_t uid = 0;
        bad = field.value().get_uint64().get(uid) || uid > UINT32_MAX;
        request.via.uid = static_cast<Principal>(uid);
      } else if (key == "admin") {
        bad = field.value().get_bool().get(request.via.admin) != simdjson::SUCCESS;
      } else {
        bad = true;
      }
      if (bad) return "via has a bad field " + std::string(key);
    }
    if (request.via.node.empty() || request.via.conn == 0) {
      return std::string("via needs node and conn");
    }
  }
  // The request is the line without via: `{` and what follows via's comma.
  std::size_t after = via_text.data() + via_text.size() - json.data();
  std::string_view rest = line.substr(after);
  std::size_t comma = rest.find_first_not_of(" \t\r\n");
  if (comma == std::string_view::npos || rest[comma] != ',') {
    return std::string("a peer request has fields after via");
  }
  request.request.reserve(rest.size());
  request.request.push_back('{');
  request.request.append(rest.substr(comma + 1));
  request.disconnect = request.request == R"({"op":"peer_disconnect"})";
  return request;
}

void tag_for_connection(std::string& out, std::size_t start, ConnId conn) {
  std::string tag(kNoticePrefix.substr(1));
  tag.append(std::to_string(conn)).push_back(',');
  out.insert(start + 1, tag);
}

std::optional<std::variant<LinkReply, LinkNotice>> parse_link_line(std::string_view line) {
  if (line.starts_with(kReplyPrefix)) {
    auto number = leading_number(line.substr(kReplyPrefix.size()));
    if (!number || !number->second.starts_with(',')) return std::nullopt;
    return LinkReply{number->first, number->second};
  }
  if (line.starts_with(kNoticePrefix)) {
    auto number = leading_number(line.substr(kNoticePrefix.size()));
    if (!number || !number->second.starts_with(',')) return std::nullopt;
    LinkNotice notice{number->first, "{"};
    notice.message.append(number->second.substr(1));
    return notice;
  }
  return std::nullopt;
}

void restore_reply(std::string& out, std::string_view id, std::string_view rest) {
  if (id.empty()) {
    out.push_back('{');
    out.append(rest.substr(1));
    return;
  }
  out.append(kReplyPrefix).append(id).append(rest);
}

}  // namespace tenure
