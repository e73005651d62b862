// Fuzzes the request parser and its field checks (§3) with whole lines. Whatever the bytes, the
// parser returns a request or a clear error, and an id it echoes is one JSON value: a reply
// built around it stays one JSON object.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "transports/request_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  tenure::ParsedRequest parsed = tenure::thread_request_parser().parse(line);
  if (const auto* error = std::get_if<tenure::Error>(&parsed.body)) {
    if (error->message.empty()) std::abort();
  }
  if (!parsed.id.empty()) {
    simdjson::dom::parser json;
    simdjson::padded_string id(parsed.id);
    if (json.parse(id).error()) std::abort();
  }
  // The parser reuses its buffers: a second look at the same line must agree with the first.
  tenure::ParsedRequest again = tenure::thread_request_parser().parse(line);
  if (again.id != parsed.id || again.body.index() != parsed.body.index()) std::abort();
  return 0;
}
