#include "storage/lost_rows.hpp"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <memory>
#include <string>
#include <unordered_set>

#include "storage/codec.hpp"

namespace tenure::storage {

Status rebuild_lost_rows(rocksdb::DB* db, const ColumnFamilies& cf, std::uint64_t& rebuilt) {
  rebuilt = 0;
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, cf.events));
  std::unordered_set<std::string> seen;  // keys whose newest journal with a row was looked at
  rocksdb::WriteBatch wb;
  rocksdb::Status s;
  std::string surviving;
  Journal journal;
  // Newest first: a key's first journal with a row is its last known state.
  for (it->SeekToLast(); it->Valid() && s.ok(); it->Prev()) {
    auto event = decode_event(it->value().ToStringView(), from_big_endian(it->key().ToStringView()),
                              &journal);
    if (!event || !journal.present || !journal.row) continue;  // nothing to rebuild from
    auto journal_state = decode_state(*journal.row);
    if (!journal_state || !seen.insert(event->key).second) continue;
    rocksdb::Status got = db->Get(read, cf.leases, event->key, &surviving);
    if (!got.ok() && !got.IsNotFound()) {
      s = got;
      break;
    }
    if (got.ok()) {
      auto state = decode_state(surviving);
      if (state && state->last_token >= journal_state->last_token) continue;
    }
    s = wb.Put(cf.leases, event->key, *journal.row);
    ++rebuilt;
  }
  if (s.ok()) s = it->status();
  if (s.ok() && rebuilt > 0) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = db->Write(wo, &wb);
  }
  return Status::from(s);
}

}  // namespace tenure::storage
