#pragma once
// Parses one NDJSON line or WebSocket text frame into a typed request (§2, §3). Buffers are
// reused from line to line; a parser is not thread-safe, so each thread keeps its own.
#include <string>
#include <string_view>

#include "transports/request.hpp"
#include "transports/request_fields.hpp"

namespace tenure {

class RequestParser {
 public:
  ParsedRequest parse(std::string_view line);

 private:
  std::string padded_;  // the line plus simdjson's padding
  FieldReader reader_;
  Fields fields_;
};

// The parser of the calling thread.
RequestParser& thread_request_parser();

}  // namespace tenure
