#include "actors/registry.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <functional>

#include "actors/engine_core.hpp"
#include "actors/key_actor.hpp"

namespace tenure {
namespace {

// Deadlines handed to actors per turn of a shard's timer; the rest follow in a new turn so an
// expiry storm cannot starve requests (§4).
constexpr std::size_t kWakeBatch = 1024;
constexpr std::size_t kStrands = 4096;
static_assert(kStrands <= UINT16_MAX + 1, "strand indexes are 16-bit in KeyActor");

// Shrinks a container that emptied out, so that keys gone idle give their memory back; the
// factor of 8 between growing and shrinking keeps churn from resizing back and forth.
constexpr std::size_t kShrinkFactor = 8;
constexpr std::size_t kShrinkAbove = 1024;  // slots; smaller tables are not worth it

template <typename T>
void shrink_if_sparse(std::vector<T>& v) {
  if (v.capacity() > kShrinkAbove && v.size() * kShrinkFactor < v.capacity()) v.shrink_to_fit();
}

}  // namespace

Registry::Registry(EngineCore& core, std::size_t shards) : core_(core) {
  shards_.reserve(shards);
  for (std::size_t i = 0; i < std::max<std::size_t>(shards, 1); ++i) {
    shards_.push_back(std::make_unique<Shard>(core.io));
  }
  strands_.reserve(kStrands);
  for (std::size_t i = 0; i < kStrands; ++i) strands_.push_back(boost::asio::make_strand(core.io));
}

std::uint16_t Registry::strand_index(std::string_view key) const {
  // A different mix than the shards' so that one shard's keys spread over all strands.
  return static_cast<std::uint16_t>((std::hash<std::string_view>{}(key) >> 16) % strands_.size());
}

std::size_t Registry::KeyHash::operator()(std::string_view key) const {
  return std::hash<std::string_view>{}(key);
}

std::size_t Registry::KeyHash::operator()(const ActorRef& actor) const {
  return (*this)(actor->key());
}

bool Registry::KeyEq::operator()(const ActorRef& a, const ActorRef& b) const {
  return a->key() == b->key();
}

bool Registry::KeyEq::operator()(std::string_view key, const ActorRef& actor) const {
  return key == actor->key();
}

Registry::~Registry() { cancel_timers(); }

Registry::Shard& Registry::shard_of(std::string_view key) {
  return *shards_[std::hash<std::string_view>{}(key) % shards_.size()];
}

ActorRef Registry::ref(std::string_view key) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.mutex);
  auto it = s.actors.find(key);
  if (it == s.actors.end()) {
    it = s.actors.insert(KeyActor::create(core_, key, strand_index(key))).first;
  }
  (*it)->refs.fetch_add(1);
  return *it;
}

ActorRef Registry::find_ref(std::string_view key) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.mutex);
  auto it = s.actors.find(key);
  if (it == s.actors.end()) return nullptr;
  (*it)->refs.fetch_add(1);
  return *it;
}

bool Registry::retire(KeyActor& actor) {
  Shard& s = shard_of(actor.key());
  std::lock_guard lock(s.mutex);
  // References are only taken under this lock, so none can appear while we decide.
  if (actor.refs.load() != 0) return false;
  s.actors.erase(actor.key());
  if (s.actors.bucket_count() > kShrinkAbove &&
      s.actors.size() * kShrinkFactor < s.actors.bucket_count()) {
    s.actors.rehash(0);
  }
  return true;
}

void Registry::schedule(ActorRef actor, Millis at) {
  Shard& s = shard_of(actor->key());
  std::lock_guard lock(s.timer_mutex);
  if (s.stopped) return;
  s.deadlines.push_back(Deadline{at, std::move(actor)});
  std::push_heap(s.deadlines.begin(), s.deadlines.end(), std::greater<>());
  if (s.armed_at == 0 || at < s.armed_at) arm(s, at);
}

void Registry::drop_wakes(std::string_view key) {
  Shard& s = shard_of(key);
  std::lock_guard lock(s.timer_mutex);
  if (++s.retired_wakes * 2 <= s.deadlines.size()) return;
  // Over-counts (entries popped at their deadline were counted too) only bring this forward.
  std::erase_if(s.deadlines, [](const Deadline& d) { return d.actor->retired(); });
  std::make_heap(s.deadlines.begin(), s.deadlines.end(), std::greater<>());
  s.retired_wakes = 0;
  shrink_if_sparse(s.deadlines);
}

void Registry::arm(Shard& s, Millis at) {
  s.armed_at = at;
  Millis delay = std::max<Millis>(at - core_.clock.now(), 0);
  s.timer.expires_after(std::chrono::milliseconds(delay));
  s.timer.async_wait(core_.turns.counted([this, &s](const boost::system::error_code& ec) {
    if (!ec) fire_shard(s);
  }));
}

void Registry::fire_shard(Shard& s) {
  std::vector<Deadline> due;
  bool more_due = false;
  {
    std::lock_guard lock(s.timer_mutex);
    if (s.stopped) return;
    Millis now = core_.clock.now();
    while (!s.deadlines.empty() && s.deadlines.front().at <= now && due.size() < kWakeBatch) {
      std::pop_heap(s.deadlines.begin(), s.deadlines.end(), std::greater<>());
      due.push_back(std::move(s.deadlines.back()));
      s.deadlines.pop_back();
    }
    shrink_if_sparse(s.deadlines);
    more_due = !s.deadlines.empty() && s.deadlines.front().at <= now;
    s.armed_at = 0;
    if (!s.deadlines.empty() && !more_due) arm(s, s.deadlines.front().at);
  }
  for (Deadline& d : due) d.actor->post_wake(d.at);
  if (more_due) boost::asio::post(core_.io, core_.turns.counted([this, &s] { fire_shard(s); }));
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

std::vector<ActorRef> Registry::snapshot() const {
  std::vector<ActorRef> out;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mutex);
    out.insert(out.end(), s->actors.begin(), s->actors.end());
  }
  return out;
}

}  // namespace tenure
