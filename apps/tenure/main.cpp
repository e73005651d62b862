// tenure: the command line for tenured. This file declares the command line and hands each
// subcommand to its implementation; nothing else.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <functional>
#include <iostream>

#include "apps/tenure/admin_backup.hpp"
#include "apps/tenure/commands.hpp"
#include "apps/tenure/failure.hpp"
#include "apps/tenure/run_command.hpp"
#include "apps/tenure/usage.hpp"
#include "apps/tenure/watch.hpp"
#include "apps/version.hpp"
#include "core/duration.hpp"
#include "core/validate.hpp"

namespace {

using namespace tenure;
using namespace tenure::cli;

constexpr const char* kExitCodes = R"(
Exit codes:
  0  success (including releasing a lease that was not held)
  1  error: bad arguments, tenured unreachable, an error reply
  4  conflict: the key is held (held), or the lease is not yours (not_holder)
  5  run, hold: the lease was lost while held; run's command got SIGTERM
     (SIGKILL after --grace)
  run otherwise exits with the command's own status (128+N if signal N killed it).)";

// Rewrites "15m" to "900000" before CLI11 stores the option, so a bad duration is reported like
// any other bad argument.
const CLI::Validator kDuration(
    [](std::string& text) {
      std::string error;
      auto ms = parse_duration(text, &error);
      if (!ms) return error;
      text = std::to_string(*ms);
      return std::string();
    },
    "");

// A lease time: a duration above zero.
const CLI::Validator kLeaseTime(
    [](std::string& text) {
      std::string error = kDuration(text);
      if (error.empty() && text == "0") error = "must be more than 0, e.g. 30s or 15m";
      return error;
    },
    "");

const CLI::Validator kKey([](std::string& key) { return tenure::validate_key(key).value_or(""); },
                          "");

// Tokens, limits and revisions: CLI11 would wrap -1 around to 2^64 - 1, and cut a number too big
// for 64 bits down to it, where they must be refused.
const CLI::Validator kWholeNumber(
    [](std::string& text) {
      std::uint64_t value = 0;
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
        return std::string("must be a whole number from 0 to 18446744073709551615");
      }
      return std::string();
    },
    "");

CLI::Option* add_key(CLI::App* cmd, std::string& key) {
  return cmd->add_option("key", key, "the key, e.g. github.com/org/repo/pr/1051")
      ->required()
      ->check(kKey)
      ->type_name("KEY");
}

CLI::Option* add_duration(CLI::App* cmd, const std::string& name,
                          std::optional<tenure::Millis>& target, const std::string& help) {
  return cmd->add_option(name, target, help)->transform(kDuration)->type_name("DURATION");
}

CLI::Option* add_ttl(CLI::App* cmd, std::optional<tenure::Millis>& target,
                     const std::string& help) {
  return cmd->add_option("--ttl", target, help)->transform(kLeaseTime)->type_name("DURATION");
}

// --wait [DURATION] and --no-wait/-n, for run and hold. A bare --wait is spelled --wait=forever by
// prepare_args().
void add_wait(CLI::App* cmd, WaitLimit& wait) {
  auto* bounded = cmd->add_option_function<std::string>(
                         "--wait",
                         [&wait](const std::string& text) {
                           if (text == "forever") {
                             wait = std::nullopt;
                             return;
                           }
                           std::string error;
                           auto ms = parse_duration(text, &error);
                           if (!ms) throw CLI::ValidationError("--wait", error);
                           wait = *ms;
                         },
                         "if KEY is held, wait at most this long; with no value (the default), "
                         "as long as it takes")
                      ->type_name("[DURATION]");
  cmd->add_flag_callback(
         "-n,--no-wait", [&wait] { wait = 0; }, "if KEY is held, exit 4 at once")
      ->excludes(bounded);
}

CLI::Option* add_owner(CLI::App* cmd, OptionalText& owner, const std::string& help) {
  return cmd->add_option("--owner", owner, help)->type_name("ID");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "tenure: take, hold and inspect leases kept by tenured, the lease coordinator.\n"
      "Durations: " +
          std::string(kDurationExamples) + " (a number needs its unit).",
      "tenure");
  app.footer(kExitCodes);
  app.set_version_flag("--version", std::string("tenure ") + build_version());
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the subcommand

  Globals g;
  app.add_option("--socket", g.socket,
                 "tenured's socket (default: $TENURE_SOCKET, else the per-user "
                 "$XDG_STATE_HOME/tenure/tenured.sock or ~/.local/state/tenure/tenured.sock if it "
                 "exists, else /run/tenure/tenured.sock if it exists); or the sockets of a "
                 "cluster's nodes, comma-separated, tried in order: when a node is lost, run "
                 "and hold renew and watch resumes through the next, and the other commands "
                 "repeat their request there when that is safe (not revoke)")
      ->type_name("PATH[,PATH...]");
  app.add_flag("--json", g.json,
               "print the server's reply line verbatim instead of a readable summary");
  app.add_option("--timeout", g.timeout,
                 "how long to wait for a reply (default 30s; an acquire's --wait is added)")
      ->transform(kDuration)
      ->type_name("DURATION");

  std::function<int()> action;
  auto on_parse = [&action](CLI::App* cmd, std::function<int()> run) {
    cmd->callback([&action, run = std::move(run)] { action = run; });
  };
  const std::string owner_default = "(default: $TENURE_OWNER, else a new random id, printed)";

  AcquireParams acquire;
  OptionalText acquire_owner;
  auto* acquire_cmd = app.add_subcommand("acquire", "take a lease on KEY");
  add_key(acquire_cmd, acquire.key);
  add_owner(acquire_cmd, acquire_owner, "who holds the lease " + owner_default);
  auto* ttl =
      add_ttl(acquire_cmd, acquire.ttl, "how long the lease lasts unless renewed (default: 15m)");
  acquire_cmd->add_flag("--open-ended", acquire.open_ended, "the lease never expires")
      ->excludes(ttl);
  add_duration(acquire_cmd, "--wait", acquire.wait,
               "if the key is held, queue for it this long (default: answer at once)");
  add_duration(acquire_cmd, "--lock-delay", acquire.lock_delay,
               "if this lease expires or is revoked, keep the key from others this long");
  acquire_cmd->add_flag("--release-on-disconnect", acquire.release_on_disconnect,
                        "end the lease when this connection closes, i.e. when tenure exits; "
                        "useful only with --wait or in scripts holding the socket");
  on_parse(acquire_cmd, [&] { return acquire_command(g, acquire_owner, acquire); });

  std::string renew_key;
  OptionalText renew_owner;
  std::optional<tenure::Millis> renew_ttl;
  std::optional<Token> renew_token;
  auto* renew_cmd = app.add_subcommand("renew", "extend your lease on KEY");
  add_key(renew_cmd, renew_key);
  add_owner(renew_cmd, renew_owner, "the lease's owner (default: $TENURE_OWNER)");
  add_ttl(renew_cmd, renew_ttl, "new lease time from now (default: the lease's own)");
  renew_cmd->add_option("--token", renew_token, "renew only this tenure")
      ->check(kWholeNumber)
      ->type_name("T");
  on_parse(renew_cmd,
           [&] { return renew_command(g, renew_key, renew_owner, renew_ttl, renew_token); });

  std::string release_key;
  OptionalText release_owner;
  std::optional<Token> release_token;
  auto* release_cmd = app.add_subcommand("release", "give up your lease on KEY");
  add_key(release_cmd, release_key);
  add_owner(release_cmd, release_owner, "the lease's owner (default: $TENURE_OWNER)");
  release_cmd->add_option("--token", release_token, "release only this tenure")
      ->check(kWholeNumber)
      ->type_name("T");
  on_parse(release_cmd,
           [&] { return release_command(g, release_key, release_owner, release_token); });

  OptionalText keepalive_owner;
  std::optional<tenure::Millis> keepalive_ttl;
  auto* keepalive_cmd =
      app.add_subcommand("keepalive", "renew every lease of an owner taken by this user");
  add_owner(keepalive_cmd, keepalive_owner, "the owner (default: $TENURE_OWNER)");
  add_ttl(keepalive_cmd, keepalive_ttl, "new lease time from now (default: each lease's own)");
  on_parse(keepalive_cmd, [&] { return keepalive_command(g, keepalive_owner, keepalive_ttl); });

  std::string check_key;
  Token check_token = 0;
  OptionalText check_owner;
  auto* check_cmd =
      app.add_subcommand("check", "is tenure --token the live tenure of KEY? (fencing check)");
  add_key(check_cmd, check_key);
  check_cmd->add_option("--token", check_token, "the token to check")
      ->required()
      ->check(kWholeNumber)
      ->type_name("T");
  add_owner(check_cmd, check_owner, "also require this owner ($TENURE_OWNER is not used here)");
  on_parse(check_cmd, [&] { return check_command(g, check_key, check_token, check_owner); });

  std::string get_key;
  auto* get_cmd = app.add_subcommand("get", "show KEY's lease, last token and waiters");
  add_key(get_cmd, get_key);
  on_parse(get_cmd, [&] { return get_command(g, get_key); });

  OptionalText list_prefix;
  std::optional<std::uint64_t> list_limit;
  OptionalText list_after;
  auto* list_cmd = app.add_subcommand("list", "list live leases, by key");
  list_cmd->add_option("prefix", list_prefix, "only keys starting with PREFIX")
      ->type_name("PREFIX");
  list_cmd->add_option("--limit", list_limit, "show at most N (default: all, page by page)")
      ->check(kWholeNumber)
      ->type_name("N");
  list_cmd->add_option("--after", list_after, "start after this key (a page's `next`)")
      ->type_name("KEY");
  on_parse(list_cmd, [&] { return list_command(g, list_prefix, list_limit, list_after); });

  std::string history_key;
  std::optional<std::uint64_t> history_limit;
  std::optional<Token> history_before;
  auto* history_cmd = app.add_subcommand("history", "KEY's tenures, newest first");
  add_key(history_cmd, history_key);
  history_cmd->add_option("--limit", history_limit, "show at most N (default: all kept)")
      ->check(kWholeNumber)
      ->type_name("N");
  history_cmd
      ->add_option("--before", history_before, "only tenures before this token (a page's `next`)")
      ->check(kWholeNumber)
      ->type_name("T");
  on_parse(history_cmd,
           [&] { return history_command(g, history_key, history_limit, history_before); });

  std::string revoke_key;
  OptionalText revoke_reason;
  auto* revoke_cmd = app.add_subcommand("revoke", "end KEY's lease whoever holds it (admins only)");
  add_key(revoke_cmd, revoke_key);
  revoke_cmd->add_option("--reason", revoke_reason, "why, for the record")->type_name("TEXT");
  on_parse(revoke_cmd, [&] { return revoke_command(g, revoke_key, revoke_reason); });

  auto* stats_cmd = app.add_subcommand("stats", "show the daemon's counters");
  on_parse(stats_cmd, [&] { return stats_command(g); });

  auto* ping_cmd = app.add_subcommand("ping", "check that tenured answers, and how fast");
  on_parse(ping_cmd, [&] { return ping_command(g); });

  add_admin_commands(app, g, on_parse);

  OptionalText watch_prefix;
  OptionalText watch_key;
  std::optional<std::uint64_t> watch_from;
  auto* watch_cmd =
      app.add_subcommand("watch", "print lease events as they happen, until interrupted");
  auto* prefix = watch_cmd->add_option("prefix", watch_prefix, "only keys starting with PREFIX")
                     ->type_name("PREFIX");
  watch_cmd->add_option("--key", watch_key, "only this key")
      ->check(kKey)
      ->type_name("KEY")
      ->excludes(prefix);
  watch_cmd->add_option("--from", watch_from, "first replay past events from revision REV")
      ->check(kWholeNumber)
      ->type_name("REV");
  on_parse(watch_cmd, [&] { return watch_command(g, watch_prefix, watch_key, watch_from); });

  const std::string own_owner =
      "a prefix for this invocation's owner (default: user@host:pid); a random suffix is "
      "always added, and $TENURE_OWNER is never used";
  RunArgs run;
  std::optional<tenure::Millis> run_grace;
  auto* run_cmd = app.add_subcommand("run", "hold KEY while a command runs");
  run_cmd->footer(R"(
Takes a tenure of its own on KEY (a unique owner; released at once should
tenure die), waiting for the key unless --no-wait, runs CMD with TENURE_KEY
and TENURE_TOKEN in its environment, renews the lease every third of its TTL,
and releases it when CMD exits. Put -- before CMD so that its options are not
taken for tenure's:
  tenure run deploy/prod --ttl 1m -- ./deploy.sh --fast
With several sockets (a cluster's nodes) the lease is not bound to the
connection, so that it outlives its node: renewals move to the next node
that answers, --ttl defaults to 1m, and a tenure killed -9 leaves the key
held until the TTL runs out.

Exit status: CMD's own (128+N if signal N killed it); 4 if KEY stayed held
(CMD does not run); 5 if the lease was lost while CMD ran: CMD then got
SIGTERM, and SIGKILL after --grace; 1 on other errors.)");
  add_key(run_cmd, run.key);
  run_cmd->add_option("command", run.command, "the command and its arguments")
      ->required()
      ->type_name("CMD");
  add_owner(run_cmd, run.owner_prefix, own_owner)->type_name("PREFIX");
  add_ttl(run_cmd, run.ttl,
          "lease time, renewed as CMD runs (default: the server's, 15m; 1m with several sockets)");
  add_wait(run_cmd, run.wait);
  add_duration(run_cmd, "--grace", run_grace,
               "after the lease is lost, time between SIGTERM and SIGKILL (default 10s)");
  on_parse(run_cmd, [&] {
    if (run_grace) run.grace = *run_grace;
    return run_command(g, run);
  });

  HoldArgs hold;
  auto* hold_cmd = app.add_subcommand(
      "hold", "hold KEY until interrupted (Ctrl-C, SIGTERM, SIGHUP) or until stdin ends");
  hold_cmd->footer(R"(
Takes a tenure of its own on KEY as run does, prints "holding KEY, token N"
and keeps the lease until interrupted or until its input ends; then releases
it. For a shell script's critical section:
  coproc tenure hold deploy/prod; read -r _ <&"${COPROC[0]}"
  ...                                # the key is held here
  kill "$COPROC_PID"; wait           # releases it
Exit status: 0 once released; 4 if KEY stayed held; 5 if the lease was lost.)");
  add_key(hold_cmd, hold.key);
  add_owner(hold_cmd, hold.owner_prefix, own_owner)->type_name("PREFIX");
  add_ttl(hold_cmd, hold.ttl,
          "lease time, renewed while held (default: the server's, 15m; 1m with several sockets)");
  add_wait(hold_cmd, hold.wait);
  on_parse(hold_cmd, [&] { return hold_command(g, hold); });

  std::vector<std::string> args = prepare_args(argc, argv);
  std::vector<std::string> names;
  for (const CLI::App* cmd : app.get_subcommands({})) names.push_back(cmd->get_name());
  if (auto problem = unknown_subcommand(args, names, {"--socket", "--timeout"},
                                        {"--json", "--help", "--version"})) {
    std::cerr << "tenure: " << *problem << "\n(see tenure --help)\n";
    return kExitError;
  }
  std::vector<char*> parsed_argv{argv[0]};
  for (std::string& arg : args) parsed_argv.push_back(arg.data());

  try {
    app.parse(static_cast<int>(parsed_argv.size()), parsed_argv.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // CLI11's own exit codes would collide with ours (§9): every usage error is 1.
    std::cerr << "tenure: " << e.what() << '\n';
    if (run_cmd->parsed() && std::find(args.begin(), args.end(), "--") == args.end()) {
      std::cerr << "(put -- before the command: tenure run KEY [options] -- CMD ARGS...)\n";
    } else {
      std::cerr << "(see tenure --help)\n";
    }
    return kExitError;
  }
  try {
    return action();
  } catch (const std::exception& e) {
    std::cerr << "tenure: " << e.what() << '\n';
    return kExitError;
  }
}
