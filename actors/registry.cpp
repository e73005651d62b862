#include "actors/registry.hpp"

#include <boost/asio/post.hpp>

#include "actors/engine_core.hpp"
#include "actors/key_actor.hpp"

namespace tenure {
namespace {

// Deadlines handed to actors per turn of a shard's timer; the rest follow in a new turn so an
// expiry storm cannot starve requests (§4).
constexpr std::size_t kWakeBatch = 1024;
constexpr std::size_t kStrands = 4096;

}  // namespace

Registry::Registry(EngineCore& core, std::size_t shards) : core_(core) {
  shards_.reserve(shards);
  for (std::size_t i = 0; i < std::max<std::size_t>(shards, 1); ++i) {
    shards_.push_back(std::make_unique<Shard>(core.io));
  }
  strands_.reserve(kStrands);
  for (std::size_t i = 0; i < kStrands; ++i) strands_.push_back(boost::asio::make_strand(core.io));
}

const Registry::Strand& Registry::strand_for(std::string_view key) const {
  // A different mix than the shards' so that one shard's keys spread over all strands.
  return strands_[(std::hash<std::string_view>{}(key) >> 16) % strands_.size()];
}

Registry::~Registry() { cancel_timers(); }

Registry::Shard& Registry::shard_of(std::string_view key) {
  return *shards_[std::hash<std::string_view>{}(key) % shards_.size()];
}

std::shared_ptr<KeyActor> Registry::ref(std::string_view key) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.mutex);
  auto it = s.actors.find(key);
  if (it == s.actors.end()) {
    auto actor = std::make_shared<KeyActor>(core_, std::string(key));
    it = s.actors.emplace(actor->key(), std::move(actor)).first;
  }
  it->second->refs.fetch_add(1);
  return it->second;
}

std::shared_ptr<KeyActor> Registry::find_ref(std::string_view key) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.mutex);
  auto it = s.actors.find(key);
  if (it == s.actors.end()) return nullptr;
  it->second->refs.fetch_add(1);
  return it->second;
}

bool Registry::retire(KeyActor& actor) {
  Shard& s = shard_of(actor.key());
  std::lock_guard lock(s.mutex);
  // References are only taken under this lock, so none can appear while we decide.
  if (actor.refs.load() != 0) return false;
  s.actors.erase(actor.key());
  return true;
}

void Registry::schedule(std::shared_ptr<KeyActor> actor, Millis at) {
  Shard& s = shard_of(actor->key());
  std::lock_guard lock(s.timer_mutex);
  if (s.stopped) return;
  s.deadlines.push(Deadline{at, std::move(actor)});
  if (s.armed_at == 0 || at < s.armed_at) arm(s, at);
}

void Registry::arm(Shard& s, Millis at) {
  s.armed_at = at;
  Millis delay = std::max<Millis>(at - core_.clock.now(), 0);
  s.timer.expires_after(std::chrono::milliseconds(delay));
  s.timer.async_wait([this, &s](const boost::system::error_code& ec) {
    if (!ec) fire_shard(s);
  });
}

void Registry::fire_shard(Shard& s) {
  std::vector<Deadline> due;
  bool more_due = false;
  {
    std::lock_guard lock(s.timer_mutex);
    if (s.stopped) return;
    Millis now = core_.clock.now();
    while (!s.deadlines.empty() && s.deadlines.top().at <= now && due.size() < kWakeBatch) {
      due.push_back(s.deadlines.top());
      s.deadlines.pop();
    }
    more_due = !s.deadlines.empty() && s.deadlines.top().at <= now;
    s.armed_at = 0;
    if (!s.deadlines.empty() && !more_due) arm(s, s.deadlines.top().at);
  }
  for (Deadline& d : due) d.actor->post_wake(d.at);
  if (more_due) boost::asio::post(core_.io, [this, &s] { fire_shard(s); });
}

void Registry::fire_due() {
  for (auto& s : shards_) fire_shard(*s);
}

void Registry::cancel_timers() {
  for (auto& s : shards_) {
    std::lock_guard lock(s->timer_mutex);
    s->stopped = true;
    s->timer.cancel();
    s->deadlines = {};
  }
}

std::size_t Registry::resident() const {
  std::size_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    n += s->actors.size();
  }
  return n;
}

std::vector<std::shared_ptr<KeyActor>> Registry::snapshot() const {
  std::vector<std::shared_ptr<KeyActor>> out;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    for (const auto& [key, actor] : s->actors) out.push_back(actor);
  }
  return out;
}

}  // namespace tenure
