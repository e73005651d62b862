#pragma once
// Parses one NDJSON line or WebSocket text frame into a typed request (§2, §3). Buffers are
// reused from line to line; a parser is not thread-safe, so each thread keeps its own.
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "transports/owner_names.hpp"
#include "transports/request.hpp"
#include "transports/request_fields.hpp"

namespace tenure {

class RequestParser {
 public:
  // `owners`: the connection's names of owners (see OwnerNames), or null.
  ParsedRequest parse(std::string_view line, OwnerNames* owners = nullptr);
  // Of the last parse: where the value of the line's id member is (offset, size), a null one
  // too; empty if it has none. The cluster's router replaces it when it forwards the line.
  std::optional<std::pair<std::size_t, std::size_t>> id_span() const;

 private:
  std::string padded_;  // the line plus simdjson's padding
  FieldReader reader_;
  Fields fields_;
};

// The parser of the calling thread.
RequestParser& thread_request_parser();

}  // namespace tenure
