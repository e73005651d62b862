// Usage mistakes caught around CLI11.
#include "apps/tenure/usage.hpp"

#include <catch2/catch.hpp>

namespace tenure::cli {
namespace {

const std::vector<std::string> kSubcommands{"acquire", "release", "renew", "run", "hold", "get"};

std::vector<std::string> prepared(std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("tenure")};
  for (std::string& arg : args) argv.push_back(arg.data());
  return prepare_args(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("an unknown subcommand is named with the nearest one", "[cli]") {
  auto unknown = [](std::vector<std::string> args) {
    return unknown_subcommand(args, kSubcommands, {"--socket", "--timeout"}, {"--json"});
  };
  CHECK(unknown({"aquire", "k"}) == "unknown subcommand 'aquire' (did you mean acquire?)");
  CHECK(unknown({"--socket", "run", "relese"}) ==
        "unknown subcommand 'relese' (did you mean release?)");
  CHECK(unknown({"frobnicate"}) == "unknown subcommand 'frobnicate'");
  CHECK(unknown({"--owner", "alice", "acquire", "k"}) ==
        "unknown subcommand 'alice' (if it is the value of --owner, put --owner after the "
        "subcommand: it is the subcommand's option)");
  CHECK(unknown({"--json", "frob"}) == "unknown subcommand 'frob'");
  CHECK_FALSE(unknown({"--json", "get", "k"}));
  CHECK_FALSE(unknown({"--version"}));
}

TEST_CASE("a bare --wait of run and hold means no limit", "[cli]") {
  using V = std::vector<std::string>;
  CHECK(prepared({"run", "k", "--wait", "--", "ls"}) ==
        V{"run", "k", "--wait=forever", "--", "ls"});
  CHECK(prepared({"hold", "k", "--wait"}) == V{"hold", "k", "--wait=forever"});
  CHECK(prepared({"run", "k", "--wait", "1m30s", "--", "ls"}) ==
        V{"run", "k", "--wait", "1m30s", "--", "ls"});
  // A number without its unit was meant as the duration, and --wait asks for the unit.
  CHECK(prepared({"run", "--wait", "2", "k", "--", "ls"}) ==
        V{"run", "--wait", "2", "k", "--", "ls"});
  // After --, the words are the command's; before run, acquire's --wait needs its duration.
  CHECK(prepared({"run", "k", "--", "x", "--wait"}) == V{"run", "k", "--", "x", "--wait"});
  CHECK(prepared({"acquire", "k", "--wait"}) == V{"acquire", "k", "--wait"});
}

}  // namespace tenure::cli
