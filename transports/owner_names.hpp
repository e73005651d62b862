#pragma once
// The owners one connection named lately, so that its requests share one stored copy of each
// name: a release finds the name its acquire stored instead of allocating a copy, and a client
// that names one owner throughout stores it once. Owned by one connection: REQUIRES (every
// method) on its strand.
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/shared_string.hpp"

namespace tenure {

class OwnerNames {
 public:
  // The stored name equal to `text`; a new one (one allocation) if none is kept.
  SharedString name(std::string_view text);

 private:
  // A new name replaces the one stored first among the slots its hash probes, so the names of
  // a connection's live leases (its latest) stay found however many others come and go:
  // tenure-bench names a new owner per lock cycle, up to --pipeline of them live at once. (Not
  // the least recently named: a release names its owner for the last time.)
  static constexpr std::size_t kSlots = 64;
  static constexpr std::size_t kProbes = 8;
  struct Slot {
    SharedString name;
    // The name's hash: a probe compares it first, without reading the name's block (another
    // thread's cache line, once a shard has used the name).
    std::size_t hash = 0;
    std::uint64_t stored = 0;  // order of storing
  };
  std::unique_ptr<std::array<Slot, kSlots>> slots_;  // on first use
  std::uint64_t stored_ = 0;
};

}  // namespace tenure
