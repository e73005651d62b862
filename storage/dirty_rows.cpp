#include "storage/dirty_rows.hpp"

#include <algorithm>

namespace tenure::storage {

DirtyKey& DirtyRows::entry(std::string_view key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) it = keys_.emplace(std::string(key), DirtyKey{}).first;
  return it->second;
}

void DirtyRows::put_row(std::string_view key, std::string_view row, Revision revision) {
  DirtyKey& e = entry(key);
  // Copied into the entry's own buffer, which a key written again before its checkpoint
  // reuses; the op's buffer goes back to its shard.
  if (e.row) {
    e.row->assign(row);
  } else {
    e.row.emplace(row);
  }
  e.row_revision = revision;
}

void DirtyRows::add_tenure(std::string_view key, TenureRecord&& record, Revision revision) {
  entry(key).tenures.emplace_back(revision, std::move(record));
}

void DirtyRows::drop_upto(Revision revision) {
  boost::unordered::erase_if(keys_, [&](auto& entry) {
    DirtyKey& e = entry.second;
    if (e.row && e.row_revision <= revision) e.row.reset();
    std::erase_if(e.tenures, [&](const auto& t) { return t.first <= revision; });
    return !e.row && e.tenures.empty();
  });
}

const DirtyKey* DirtyRows::find(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? nullptr : &it->second;
}

}  // namespace tenure::storage
