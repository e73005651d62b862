#include "tests/cluster/fencing.hpp"

#include <algorithm>
#include <limits>

namespace cluster {

namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

std::int64_t deadline_of(const e2e::Json& reply) {
  auto at = e2e::time_ms(reply["expires_at"]);
  return at ? *at : kNever;
}

std::string name(const std::string& key, std::uint64_t token) {
  return e2e::quote(key) + " token " + std::to_string(token);
}

}  // namespace

Hold* FencingChecker::find(const std::string& key, std::uint64_t token) {
  auto k = holds_.find(key);
  if (k == holds_.end()) return nullptr;
  auto t = k->second.find(token);
  return t == k->second.end() ? nullptr : &t->second;
}

void FencingChecker::record_revision(std::uint64_t revision, const std::string& what,
                                     Sequence* sequence) {
  auto [it, fresh] = revisions_.emplace(revision, what);
  if (!fresh && it->second != what) {
    violations_.push_back("revision " + std::to_string(revision) +
                          " reported for two changes: " + it->second + " and " + what);
  }
  if (sequence) {
    if (revision <= sequence->last_revision) {
      violations_.push_back(sequence->name + ": revision went back from " +
                            std::to_string(sequence->last_revision) + " to " +
                            std::to_string(revision) + " (" + what + ")");
    }
    sequence->last_revision = std::max(sequence->last_revision, revision);
  }
}

void FencingChecker::on_reply(const e2e::Json& reply, Sequence* sequence) {
  const std::string status = reply["status"].str();
  if (status != "acquired" && status != "renewed" && status != "released") return;
  const std::string key = reply["key"].str();
  const e2e::Json token_json = reply["token"];
  if (token_json.is_null()) return;  // an idempotent release of nothing
  const std::uint64_t token = token_json.u64();
  const std::uint64_t revision = reply["revision"].is_integer() ? reply["revision"].u64() : 0;
  std::lock_guard lock(mutex_);

  if (status == "released") {
    std::string what = "released " + name(key, token);
    record_revision(revision, what, sequence);
    changes_.push_back({revision, key, token, "released"});
    if (Hold* h = find(key, token)) h->released_revision = revision;
    return;
  }
  const std::int64_t expires_at = deadline_of(reply);
  const bool fresh = status == "acquired" && reply["fresh"] == true;
  if (fresh) {
    std::string what = "acquired " + name(key, token) + " by " + reply["owner"].str();
    record_revision(revision, what, sequence);
    changes_.push_back({revision, key, token, "acquired"});
    Hold* old = find(key, token);
    if (old) {
      violations_.push_back("double grant of " + name(key, token) + ": to " + old->owner +
                            " at revision " + std::to_string(old->revision) + " and to " +
                            reply["owner"].str() + " at revision " + std::to_string(revision));
      return;
    }
    Hold& h = holds_[key][token];
    h.key = key;
    h.owner = reply["owner"].str();
    h.token = token;
    h.revision = revision;
    h.acquired_at = e2e::time_ms(reply["acquired_at"]).value_or(0);
    h.expires_at = expires_at;
    return;
  }
  // A renewal (renew, or an idempotent acquire): the deadline moves.
  if (expires_at == kNever && status == "renewed") return;  // open-ended: no event
  std::string what = "renewed " + name(key, token) + " until " + reply["expires_at"].dump();
  record_revision(revision, what, sequence);
  changes_.push_back({revision, key, token, "renewed"});
  if (Hold* h = find(key, token)) h->expires_at = std::max(h->expires_at, expires_at);
}

void FencingChecker::release_sent(const std::string& key, std::uint64_t token) {
  std::lock_guard lock(mutex_);
  if (Hold* h = find(key, token); h && !h->release_sent_at) {
    h->release_sent_at = e2e::wall_now_ms();
  }
}

void FencingChecker::disconnected(const std::string& key, std::uint64_t token) {
  std::lock_guard lock(mutex_);
  if (Hold* h = find(key, token); h && !h->disconnected_at) {
    h->disconnected_at = e2e::wall_now_ms();
  }
}

std::vector<std::string> FencingChecker::verify() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out = violations_;
  for (const auto& [key, by_token] : holds_) {
    for (auto a = by_token.begin(); a != by_token.end(); ++a) {
      const Hold& earlier = a->second;
      for (auto b = std::next(a); b != by_token.end(); ++b) {
        const Hold& later = b->second;
        if (later.revision <= earlier.revision) {
          out.push_back("tokens out of revision order on " + e2e::quote(key) + ": token " +
                        std::to_string(earlier.token) + " at revision " +
                        std::to_string(earlier.revision) + ", token " +
                        std::to_string(later.token) + " at revision " +
                        std::to_string(later.revision));
        }
        // How the earlier tenure may have ended before the later one began.
        const std::int64_t begun = later.acquired_at + kClockSlackMs;
        bool ended = earlier.expires_at <= begun;
        ended = ended || (earlier.released_revision && *earlier.released_revision < later.revision);
        ended = ended || (earlier.release_sent_at && *earlier.release_sent_at <= begun);
        ended = ended || (earlier.disconnected_at && *earlier.disconnected_at <= begun);
        if (!ended) {
          out.push_back("overlapping holds of " + e2e::quote(key) + ": token " +
                        std::to_string(earlier.token) + " (" + earlier.owner +
                        ", acknowledged until " + std::to_string(earlier.expires_at) +
                        ") and token " + std::to_string(later.token) + " (" + later.owner +
                        ", acquired at " + std::to_string(later.acquired_at) + ", revision " +
                        std::to_string(later.revision) + ")");
        }
      }
    }
  }
  return out;
}

std::vector<Hold> FencingChecker::holds() const {
  std::lock_guard lock(mutex_);
  std::vector<Hold> out;
  for (const auto& [key, by_token] : holds_) {
    for (const auto& [token, hold] : by_token) out.push_back(hold);
  }
  return out;
}

std::vector<Hold> FencingChecker::live_at(std::int64_t at_ms) const {
  std::vector<Hold> out;
  for (Hold& h : holds()) {
    bool ended = h.released_revision || h.release_sent_at || h.disconnected_at;
    if (!ended && h.expires_at > at_ms) out.push_back(std::move(h));
  }
  return out;
}

std::uint64_t FencingChecker::max_revision() const {
  std::lock_guard lock(mutex_);
  return revisions_.empty() ? 0 : revisions_.rbegin()->first;
}

std::vector<FencingChecker::Change> FencingChecker::changes() const {
  std::lock_guard lock(mutex_);
  return changes_;
}

std::size_t FencingChecker::grants() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& [key, by_token] : holds_) n += by_token.size();
  return n;
}

}  // namespace cluster
