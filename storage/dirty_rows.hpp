#pragma once
// The lease rows and ended tenures that are durable in the event log (as journals) but not yet
// in their own column families: what reads must add to a durable snapshot until a checkpoint
// writes them there. Not thread-safe: the GroupWriter guards it.
#include <boost/unordered/unordered_flat_map.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/lease.hpp"

namespace tenure::storage {

struct DirtyKey {
  std::optional<std::string> row;  // the newest lease row, encoded
  Revision row_revision = 0;
  // Ended tenures, oldest first, with the revision of the op that ended them.
  std::vector<std::pair<Revision, TenureRecord>> tenures;
  std::uint64_t listed_in = 0;  // the generation of the key list that has this key
};

class DirtyRows {
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>()(key);
    }
  };
  struct Eq {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const { return a == b; }
  };

 public:
  // Unordered: an op costs one hash lookup; the rare reads that need key order sort.
  using Map = boost::unordered_flat_map<std::string, DirtyKey, Hash, Eq>;
  // Keys one after the other in `bytes`, each ending at its entry of `ends`.
  struct KeyList {
    std::string bytes;
    std::vector<std::size_t> ends;
  };

  // One op's changes with one lookup of its key: its new row, if any, and the tenures it ended
  // (moved out of `tenures`; the live ones are left, unrecorded).
  void record(std::string_view key, const std::optional<std::string>& row, TenureRecords& tenures,
              Revision revision);
  // Forgets what a checkpoint at `revision` wrote to the column families, for the keys of its
  // list from `next` on, at most `count` of them; `next` moves past them. What stays (changed
  // since) is listed again for the next checkpoint.
  void drop_listed(const KeyList& keys, std::size_t& next, std::size_t count, Revision revision);
  // Hands over the keys changed since the last call (or relist_all()), in `out` (whose buffers
  // the next list reuses): what a checkpoint must write, without a walk over every key.
  void take_listed(KeyList& out);
  // Lists every key again: after a checkpoint was refused or undone, its keys are unwritten.
  void relist_all();

  const DirtyKey* find(std::string_view key) const;
  // Every dirty key, in no order.
  template <typename Visit>  // void(const Map::value_type&)
  void for_each(Visit&& visit) const {
    for (const auto& entry : keys_) visit(entry);
    for (const auto& entry : moving_) visit(entry);
  }
  bool empty() const { return keys_.empty() && moving_.empty(); }
  // Slots of the tables, the one being outgrown included.
  std::size_t slots() const { return keys_.bucket_count() + moving_.bucket_count(); }
  // Keys still in the table being outgrown (see moving_).
  std::size_t moving() const { return moving_.size(); }
  // Moves up to `count` keys of the table being outgrown to the new one: the owner's steps
  // between its batches.
  void move_some(std::size_t count);
  // Revision of the newest change recorded (what a checkpoint of everything here is at).
  Revision revision() const { return revision_; }
  void set_revision(Revision revision) { revision_ = revision; }

 private:
  // Where `key` is: its table (keys_, or moving_ if only that one has it) and its place there,
  // or that table's end() if neither has it.
  template <typename Self>
  static auto locate(Self& self, std::string_view key);
  DirtyKey& entry(std::string_view key);
  // Before a new key goes in: a table about to outgrow its room becomes moving_, and a new one
  // twice as big takes the keys.
  void grow_if_full();
  // Moves one key of moving_ to keys_.
  Map::iterator move_over(Map::iterator from);
  void erase_moving(Map::iterator it);
  void set_row(DirtyKey& e, std::string_view row, Revision revision);
  void list(std::string_view key, DirtyKey& e);
  // Keeps a dropped buffer for the next key to be written, up to kMaxSpares of each kind.
  void keep_spare(std::string&& row);
  void keep_spare(std::vector<std::pair<Revision, TenureRecord>>&& tenures);
  // Once nothing is dirty after a burst: gives back the table and the spares above kKeptSlots.
  void release_burst();

  // What a checkpoint dropped is what the next second dirties again: reusing the rows' and
  // tenure lists' buffers spares an allocation per op in steady state.
  static constexpr std::size_t kMaxSpares = 65'536;
  // Table slots and spares a quiet ledger keeps: a steady load's checkpoint reuses them.
  static constexpr std::size_t kKeptSlots = 16'384;
  // A table of this many slots or more grows in steps; smaller ones rehash at once (cheap).
  static constexpr std::size_t kGrowInStepsAbove = 4'096;
  Map keys_;
  // The table keys_ outgrew, emptied a chunk at a time (move_some) and as its keys change. A
  // rehash of the whole table at once held the sync thread, under the lock every sync's answers
  // and every durable read take, for 45 ms at 54k keys in an expiry storm (docs/benchmarks.md);
  // Redis grows its dict in steps too. If the new table fills first, the rest moves at once.
  Map moving_;
  Map::iterator next_move_ = moving_.end();  // the next key of moving_ to move
  KeyList listed_;
  std::uint64_t generation_ = 1;
  std::vector<std::string> spare_rows_;
  std::vector<std::vector<std::pair<Revision, TenureRecord>>> spare_tenures_;
  Revision revision_ = 0;
};

}  // namespace tenure::storage
