#include "actors/reads.hpp"

#include <map>

namespace tenure {

Error ledger_unreadable(const storage::Status& status) {
  return Error{errc::unavailable, "cannot read the ledger: " + status.message()};
}

HistoryResult read_history(const storage::LedgerStore& ledger, const HistoryRequest& request) {
  HistoryResult result;
  bool more = false;
  storage::Status status =
      ledger.history(request.key, request.before_token, request.limit, result.tenures, more);
  if (!status.ok()) {
    result = HistoryResult{};
    result.error = ledger_unreadable(status);
    return result;
  }
  if (more && !result.tenures.empty()) result.next = result.tenures.back().token;
  return result;
}

void overlay_history(HistoryResult& result, const std::vector<TenureRecord>& newer,
                     const HistoryRequest& request) {
  if (newer.empty() || result.error) return;
  std::map<Token, TenureRecord, std::greater<>> merged;
  for (TenureRecord& t : result.tenures) merged[t.token] = std::move(t);
  for (const TenureRecord& t : newer) {
    if (request.before_token == 0 || t.token < request.before_token) merged[t.token] = t;
  }
  bool more = result.next.has_value() || merged.size() > request.limit;
  result.tenures.clear();
  for (auto& [token, record] : merged) {
    if (result.tenures.size() == request.limit) break;
    result.tenures.push_back(std::move(record));
  }
  result.next.reset();
  if (more && !result.tenures.empty()) result.next = result.tenures.back().token;
}

ListResult read_list(const storage::LedgerStore& ledger, const ListRequest& request, Millis now) {
  ListResult result;
  bool more = false;
  std::vector<storage::LeaseRow> rows;
  storage::Status status =
      ledger.list(request.prefix, request.after, request.limit, now, rows, more);
  if (!status.ok()) {
    result.error = ledger_unreadable(status);
    return result;
  }
  for (auto& row : rows) {
    result.leases.push_back(ListedLease{std::move(row.key), std::move(row.lease)});
  }
  if (more && !result.leases.empty()) result.next = result.leases.back().key;
  return result;
}

Error ledger_unavailable(const storage::LedgerStore& ledger) {
  std::string why = ledger.last_error();
  return Error{errc::unavailable,
               "the ledger is not accepting writes" + (why.empty() ? "" : ": " + why)};
}

}  // namespace tenure
