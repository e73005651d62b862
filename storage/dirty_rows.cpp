#include "storage/dirty_rows.hpp"

#include <algorithm>

namespace tenure::storage {

template <typename Self>
auto DirtyRows::locate(Self& self, std::string_view key) {
  auto* table = &self.keys_;
  auto it = table->find(key);
  if (it == table->end() && !self.moving_.empty()) {
    table = &self.moving_;
    it = table->find(key);
  }
  return std::pair{table, it};
}

DirtyKey& DirtyRows::entry(std::string_view key) {
  auto [table, it] = locate(*this, key);
  if (it == table->end()) {
    grow_if_full();
    DirtyKey fresh;
    if (!spare_tenures_.empty()) {
      fresh.tenures = std::move(spare_tenures_.back());
      spare_tenures_.pop_back();
    }
    it = keys_.emplace(std::string(key), std::move(fresh)).first;
  } else if (table == &moving_) {
    it = move_over(it);
  }
  list(key, it->second);
  return it->second;
}

void DirtyRows::grow_if_full() {
  std::size_t slots = keys_.bucket_count();
  // boost's flat map rehashes at 7/8 full: this is before that.
  if (slots < kGrowInStepsAbove || keys_.size() + 1 < slots / 4 * 3) return;
  move_some(moving_.size());  // never two tables being outgrown at once
  moving_.swap(keys_);
  keys_.reserve(slots);  // room for `slots` keys: twice the slots
  next_move_ = moving_.begin();
}

void DirtyRows::move_some(std::size_t count) {
  for (; count > 0 && next_move_ != moving_.end(); --count) move_over(next_move_);
}

DirtyRows::Map::iterator DirtyRows::move_over(Map::iterator from) {
  auto to = keys_.emplace(from->first, std::move(from->second)).first;
  erase_moving(from);
  return to;
}

void DirtyRows::erase_moving(Map::iterator it) {
  // Erasing moves no other entry of a flat map: the cursor stays valid unless it is the one.
  if (it == next_move_) ++next_move_;
  moving_.erase(it);
  if (moving_.empty()) {
    Map().swap(moving_);  // its memory back
    next_move_ = moving_.end();
  }
}

void DirtyRows::list(std::string_view key, DirtyKey& e) {
  if (e.listed_in == generation_) return;
  e.listed_in = generation_;
  listed_.bytes.append(key);
  listed_.ends.push_back(listed_.bytes.size());
}

void DirtyRows::take_listed(KeyList& out) {
  std::swap(out, listed_);
  listed_.bytes.clear();
  listed_.ends.clear();
  ++generation_;
}

void DirtyRows::relist_all() {
  listed_.bytes.clear();
  listed_.ends.clear();
  ++generation_;
  for (auto& [key, e] : keys_) list(key, e);
  for (auto& [key, e] : moving_) list(key, e);
}

void DirtyRows::keep_spare(std::string&& row) {
  if (spare_rows_.size() < kMaxSpares) spare_rows_.push_back(std::move(row));
}

void DirtyRows::keep_spare(std::vector<std::pair<Revision, TenureRecord>>&& tenures) {
  if (tenures.capacity() == 0 || spare_tenures_.size() >= kMaxSpares) return;
  tenures.clear();
  spare_tenures_.push_back(std::move(tenures));
}

void DirtyRows::set_row(DirtyKey& e, std::string_view row, Revision revision) {
  // Copied into the entry's own buffer, which a key written again before its checkpoint
  // reuses; the op's buffer goes back to its shard.
  if (!e.row) {
    if (spare_rows_.empty()) {
      e.row.emplace();
    } else {
      e.row.emplace(std::move(spare_rows_.back()));
      spare_rows_.pop_back();
    }
  }
  e.row->assign(row);
  e.row_revision = revision;
}

void DirtyRows::record(std::string_view key, const std::optional<std::string>& row,
                       TenureRecords& tenures, Revision revision) {
  bool ended = std::any_of(tenures.begin(), tenures.end(),
                           [](const TenureRecord& t) { return t.ended_at.has_value(); });
  if (!row && !ended) return;
  DirtyKey& e = entry(key);
  if (row) set_row(e, *row, revision);
  for (TenureRecord& t : tenures) {
    if (t.ended_at) e.tenures.emplace_back(revision, std::move(t));
  }
}

void DirtyRows::drop_listed(const KeyList& keys, std::size_t& next, std::size_t count,
                            Revision revision) {
  std::size_t end = std::min(keys.ends.size(), next + count);
  for (; next < end; ++next) {
    std::size_t begin = next == 0 ? 0 : keys.ends[next - 1];
    std::string_view key(keys.bytes.data() + begin, keys.ends[next] - begin);
    auto [table, it] = locate(*this, key);
    if (it == table->end()) continue;  // listed twice, or dropped by an earlier checkpoint
    DirtyKey& e = it->second;
    if (e.row && e.row_revision <= revision) {
      keep_spare(std::move(*e.row));
      e.row.reset();
    }
    std::erase_if(e.tenures, [&](const auto& t) { return t.first <= revision; });
    if (e.row || !e.tenures.empty()) {
      list(key, e);  // changed while the checkpoint was written: the next one writes it
      continue;
    }
    keep_spare(std::move(e.tenures));
    if (table == &moving_) {
      erase_moving(it);
    } else {
      keys_.erase(it);
    }
  }
  if (empty() && keys_.bucket_count() > kKeptSlots) release_burst();
}

void DirtyRows::release_burst() {
  // The table keeps the size of the biggest burst (boost's maps never shrink on erase), and the
  // spares a burst's worth of buffers: ~15 MiB after a million acquires, held for ever by a ledger
  // that went quiet. A steady load's checkpoints fit under kKeptSlots and keep theirs.
  Map().swap(keys_);
  spare_rows_.resize(std::min(spare_rows_.size(), kKeptSlots));
  spare_rows_.shrink_to_fit();
  spare_tenures_.resize(std::min(spare_tenures_.size(), kKeptSlots));
  spare_tenures_.shrink_to_fit();
}

const DirtyKey* DirtyRows::find(std::string_view key) const {
  auto [table, it] = locate(*this, key);
  return it == table->end() ? nullptr : &it->second;
}

}  // namespace tenure::storage
