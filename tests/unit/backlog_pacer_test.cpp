// How a shard paces a backlog of due deadlines against its ledger's answers.
#include "actors/backlog_pacer.hpp"

#include <catch2/catch.hpp>

using tenure::BacklogPacer;

TEST_CASE("a backlog with nothing in flight goes on at once", "[shards]") {
  BacklogPacer pacer;
  // A batch ended by a turn that staged nothing (its leases were gone already): nothing would
  // answer, so waiting would strand the rest.
  CHECK(pacer.next_batch_now(false));
}

TEST_CASE("a backlog's next batch waits for the batch before it", "[shards]") {
  BacklogPacer pacer;
  REQUIRE_FALSE(pacer.next_batch_now(true));
  pacer.handed_over();  // the batch, at the end of its turn
  CHECK(pacer.answered());
  CHECK_FALSE(pacer.answered());  // resumed once, not again
}

TEST_CASE("a backlog keeps one batch in flight behind earlier groups", "[shards]") {
  BacklogPacer pacer;
  pacer.handed_over();  // a request's group, in flight
  pacer.handed_over();  // another
  REQUIRE_FALSE(pacer.next_batch_now(true));
  pacer.handed_over();            // the batch
  CHECK_FALSE(pacer.answered());  // two groups still ahead of its answer, the batch included
  CHECK(pacer.answered());        // one: the batch's own; the pipeline stays full
}

TEST_CASE("groups handed over after a held batch do not starve the backlog", "[shards]") {
  BacklogPacer pacer;
  int batches = 0;
  auto batch = [&] {
    ++batches;
    bool now = pacer.next_batch_now(true);
    pacer.handed_over();
    return now;
  };
  pacer.handed_over();  // two requests' groups in flight
  pacer.handed_over();
  REQUIRE_FALSE(batch());
  // A steady load: each group answered is followed by another, a request's or the backlog's
  // next batch, so three are always in flight, more than one of them requests'. The backlog
  // still moves on once the groups ahead of its batch are answered.
  int answers_since_batch = 0;
  for (int answers = 0; answers < 40; ++answers) {
    ++answers_since_batch;
    if (pacer.answered()) {
      CHECK_FALSE(batch());
      answers_since_batch = 0;
    } else {
      pacer.handed_over();
    }
    REQUIRE(answers_since_batch <= 2);  // its own answer and the one group ahead of it
  }
  CHECK(batches == 21);
}
