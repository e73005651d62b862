#pragma once
// Reads answered from the ledger alone, for keys without a resident actor (such a key has no
// live lease: live leases keep their actor resident) and for history.
#include "actors/requests.hpp"
#include "storage/ledger_store.hpp"

namespace tenure {

HistoryResult read_history(const storage::LedgerStore& ledger, const HistoryRequest& request);
// Lays `newer` records (later versions of the same tokens, or new tokens) over a history page.
void overlay_history(HistoryResult& result, const std::vector<TenureRecord>& newer,
                     const HistoryRequest& request);
ListResult read_list(const storage::LedgerStore& ledger, const ListRequest& request, Millis now);
Error ledger_unavailable(const storage::LedgerStore& ledger);
// A read that failed while serving (§6).
Error ledger_unreadable(const storage::Status& status);

}  // namespace tenure
