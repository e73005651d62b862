#pragma once
// One line from tenured — a reply or an event — as the CLI reads it: the protocol library's
// Message, refused with a CliError when it is not a JSON object.
#include <string>

#include "protocol/message.hpp"

namespace tenure::cli {

using protocol::array_field;
using protocol::bool_field;
using protocol::Fields;
using protocol::object_field;
using protocol::string_field;
using protocol::time_field;
using protocol::uint_field;

class Message {
 public:
  // Throws CliError when the line is not a JSON object.
  explicit Message(std::string line);

  // The line exactly as the server sent it, for --json.
  const std::string& line() const { return message_.line(); }
  Fields fields() const { return message_.fields(); }
  std::optional<std::uint64_t> id() const { return message_.id(); }
  std::string_view status() const { return message_.status(); }  // "" for events
  std::string_view event() const { return message_.event(); }    // "" for replies

 private:
  protocol::Message message_;
};

}  // namespace tenure::cli
