#pragma once
// Paces a shard's backlog of due deadlines (a restart over overdue leases) against its ledger: a
// batch per commit, not as fast as the shard can stage them. The next batch waits until at most
// one group handed over before it is still in flight (the writer's pipeline stays full), so a
// request's write queues behind one or two batches, not behind the whole backlog. Groups handed
// over after it do not hold it back: a steady load cannot starve the backlog.
// REQUIRES: used on its shard's strand only.
#include <cstdint>

namespace tenure {

class BacklogPacer {
 public:
  // A group left for the ledger.
  void handed_over() { ++handed_over_; }

  // A backlog's batch was staged; `staged` says whether it (with whatever else the turn staged)
  // is still to be handed over at the end of the turn. True: the next batch may go at once,
  // nothing being in flight to resume it. False: it waits until answered() says so.
  bool next_batch_now(bool staged) {
    std::uint64_t through = handed_over_ + (staged ? 1 : 0);
    if (through == answered_) return true;
    held_ = true;
    resumes_at_ = through - 1;
    return false;
  }

  // The ledger answered a group (they are answered in the order handed over): true if the held
  // backlog's next batch goes now.
  bool answered() {
    ++answered_;
    if (!held_ || answered_ < resumes_at_) return false;
    held_ = false;
    return true;
  }

 private:
  std::uint64_t handed_over_ = 0;
  std::uint64_t answered_ = 0;
  bool held_ = false;
  std::uint64_t resumes_at_ = 0;  // the answered_ that resumes a held backlog
};

}  // namespace tenure
