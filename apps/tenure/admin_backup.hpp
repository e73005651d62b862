#pragma once
// `tenure admin backup DIR`: asks tenured for an online, consistent copy of its ledger in DIR
// (on tenured's machine; DIR must not exist). Admin principals only. Restore it with
// `tenured --restore-from DIR` (see docs/operations.md).
#include <CLI/CLI.hpp>
#include <functional>

#include "apps/tenure/session.hpp"

namespace tenure::cli {

// Adds `admin backup` to `app`; `on_parse` registers what runs once it is parsed.
void add_admin_commands(CLI::App& app, const Globals& g,
                        const std::function<void(CLI::App*, std::function<int()>)>& on_parse);

}  // namespace tenure::cli
