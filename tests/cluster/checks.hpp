#pragma once
// The checks every cluster scenario ends with (issue 13, "after each"): no double grant, no token
// or revision going back (the fencing checker), every acknowledged lease still held or ended by
// its own deadline or release, and watches that saw every acknowledged change without a gap.
#include <catch2/catch.hpp>

#include "tests/cluster/cluster.hpp"
#include "tests/cluster/fencing.hpp"
#include "tests/cluster/load.hpp"
#include "tests/cluster/watcher.hpp"

namespace cluster {

// Every violation the checker found, one CHECK each (so all are printed).
void check_fencing(const FencingChecker& checker);
void check_load(const Load& load);

// Every acknowledged, unreleased lease whose deadline is ahead is held by the same tenure, as
// `get` on a running node shows; one whose deadline passed is no longer (`get` shows it free or a
// later tenure), and the key's last_token never went below it.
void check_holds(Cluster& cluster, const FencingChecker& checker);

// The watch saw consecutive revisions, and, after it started, an event for every acknowledged
// change, at the change's revision, on its key and token.
void check_watch(const Watcher& watcher, const FencingChecker& checker);

// The end of every scenario under load: stops the load (printing its summary under `name`), then
// all of the checks above, each watch once it caught up with the last acknowledged change.
void check_after_load(Cluster& cluster, Load& load, const FencingChecker& checker,
                      const std::vector<Watcher*>& watchers, const std::string& name);

// A running node's index other than `not_node` (the first one).
int running_node(Cluster& cluster, std::optional<int> not_node = std::nullopt);

}  // namespace cluster
