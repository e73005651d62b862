#include "actors/reads.hpp"

namespace tenure {

HistoryResult read_history(const storage::Ledger& ledger, const HistoryRequest& request) {
  HistoryResult result;
  bool more = false;
  result.tenures = ledger.history(request.key, request.before_token, request.limit, more);
  if (more && !result.tenures.empty()) result.next = result.tenures.back().token;
  return result;
}

ListResult read_list(const storage::Ledger& ledger, const ListRequest& request, Millis now) {
  ListResult result;
  bool more = false;
  for (auto& row : ledger.list(request.prefix, request.after, request.limit, now, more)) {
    result.leases.push_back(ListedLease{std::move(row.key), std::move(row.lease)});
  }
  if (more && !result.leases.empty()) result.next = result.leases.back().key;
  return result;
}

Error ledger_unavailable(const storage::Ledger& ledger) {
  std::string why = ledger.writer().last_error();
  return Error{errc::unavailable,
               "the ledger is not accepting writes" + (why.empty() ? "" : ": " + why)};
}

}  // namespace tenure
