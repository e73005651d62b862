#include "apps/tenure/admin_backup.hpp"

#include <filesystem>
#include <memory>

#include "core/json_writer.hpp"

namespace tenure::cli {
namespace {

int backup_command(const Globals& g, const std::string& dir) {
  // The server resolves nothing: the path it gets is absolute.
  std::string absolute = std::filesystem::absolute(dir).lexically_normal().string();
  // Not repeated on another node: a backup is of one node's ledger (refused in cluster mode).
  Message reply = Session(g).call(
      [&](RequestId id) {
        std::string line;
        JsonWriter w(line);
        w.begin_object().field("id", static_cast<std::uint64_t>(id)).field("op", "backup");
        w.field("dir", absolute).end_object();
        return line;
      },
      Resend::never);
  return report(g, reply, "ok", [&](Fields reply) {
    std::uint64_t revision = 0;
    std::string upto = reply["revision"].get(revision) == simdjson::SUCCESS
                           ? " (up to revision " + std::to_string(revision) + ")"
                           : "";
    return "backed up the ledger to " + absolute + upto +
           "; restore with: tenured --restore-from " + absolute;
  });
}

}  // namespace

void add_admin_commands(CLI::App& app, const Globals& g,
                        const std::function<void(CLI::App*, std::function<int()>)>& on_parse) {
  auto* admin = app.add_subcommand(
      "admin", "operator commands (admins: root, tenured's user, --admin-group)");
  admin->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  auto* backup = admin->add_subcommand(
      "backup", "copy the ledger, consistent and online, to DIR on tenured's machine");
  backup->add_option("dir", *dir, "a directory that does not exist yet")
      ->required()
      ->type_name("DIR");
  on_parse(backup, [&g, dir] { return backup_command(g, *dir); });
}

}  // namespace tenure::cli
