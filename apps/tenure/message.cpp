#include "apps/tenure/message.hpp"

#include "apps/tenure/failure.hpp"

namespace tenure::cli {
namespace {

protocol::Message parsed(std::string line) {
  auto message = protocol::Message::parse(line);
  if (!message) throw CliError("tenured sent something that is not a JSON object: " + line);
  return std::move(*message);
}

}  // namespace

Message::Message(std::string line) : message_(parsed(std::move(line))) {}

}  // namespace tenure::cli
