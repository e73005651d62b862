#pragma once
// The fencing checker: every reply a cluster test gets goes through it, and verify() says what
// broke the contract's cluster-wide rules (§1, §3, §10):
// - per key, a token names one tenure: never two fresh grants with the same token, and fresh
//   grants in token order are in revision order;
// - acknowledged holds never overlap: a grant of a higher token comes only after the lower one
//   ended by its own deadline (the latest acknowledged expires_at) or by a release that was
//   acknowledged first (or at least sent);
// - a revision names one event: two replies reporting different changes with one revision is a
//   double commit;
// - per sequential client, the revisions of its state-changing replies strictly increase (across
//   nodes: a reply comes only after its etcd transaction, so a later one cannot be older).
// Thread-safe: load threads record, the test verifies at the end.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/json.hpp"

namespace cluster {

// One client that sends a request only after the previous one's reply (its revisions increase).
struct Sequence {
  std::string name;
  std::uint64_t last_revision = 0;
};

// A tenure the checker saw granted, as the replies describe it.
struct Hold {
  std::string key;
  std::string owner;
  std::uint64_t token = 0;
  std::uint64_t revision = 0;    // of the fresh grant
  std::int64_t acquired_at = 0;  // ms since the epoch, server's wall clock
  std::int64_t expires_at = 0;   // the latest acknowledged deadline; INT64_MAX: open-ended
  std::optional<std::uint64_t> released_revision;  // a release acknowledged with this revision
  std::optional<std::int64_t> release_sent_at;     // a release sent (our wall clock)
  std::optional<std::int64_t> disconnected_at;     // release_on_disconnect: its connection closed
};

class FencingChecker {
 public:
  // Clocks of different processes on one machine read the same wall clock; this covers the ms
  // rounding of replies and a clock read a little before or after a step.
  static constexpr std::int64_t kClockSlackMs = 50;

  // Any reply to acquire, renew or release (others are ignored). `sequence`: the client's, or null
  // for a pipelining one.
  void on_reply(const e2e::Json& reply, Sequence* sequence = nullptr);
  // Before sending a release of (key, token): a lost reply may still have ended the tenure.
  void release_sent(const std::string& key, std::uint64_t token);
  // A release_on_disconnect tenure's connection closed (at our wall clock, now).
  void disconnected(const std::string& key, std::uint64_t token);

  // Every rule broken so far, in words (empty: none).
  std::vector<std::string> verify() const;
  // The holds acknowledged, by key and token.
  std::vector<Hold> holds() const;
  // The holds that are acknowledged, not released and whose deadline is after `at_ms`.
  std::vector<Hold> live_at(std::int64_t at_ms) const;
  // The highest revision any reply carried.
  std::uint64_t max_revision() const;
  // (revision, key, token) of every acknowledged state change, for matching watch events.
  struct Change {
    std::uint64_t revision;
    std::string key;
    std::uint64_t token;
    std::string what;  // acquired, renewed, released
  };
  std::vector<Change> changes() const;
  std::size_t grants() const;

 private:
  void record_revision(std::uint64_t revision, const std::string& what, Sequence* sequence);
  Hold* find(const std::string& key, std::uint64_t token);

  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::uint64_t, Hold>> holds_;  // key -> token -> hold
  std::map<std::uint64_t, std::string> revisions_;              // revision -> change
  std::vector<Change> changes_;
  std::vector<std::string> violations_;
};

}  // namespace cluster
