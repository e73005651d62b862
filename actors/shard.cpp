#include "actors/shard.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/bind_executor.hpp>
#include <functional>

#include "actors/engine_core.hpp"
#include "actors/key_actor.hpp"

namespace tenure {
namespace {

// Writes per group at most: recovery stages a whole ledger in one turn.
constexpr std::size_t kMaxGroup = 4096;

// Shrinks a container that emptied out, so that keys gone idle give their memory back; the
// factor of 8 between growing and shrinking keeps churn from resizing back and forth.
constexpr std::size_t kShrinkFactor = 8;
constexpr std::size_t kShrinkAbove = 1024;  // slots; smaller tables are not worth it

// Committed groups' vectors kept for the next groups, and their rows' buffers: as many as the
// groups in flight under a load need (an open loop's lone requests are a group each, and dozens
// wait for one sync); a recovery's big groups are not kept.
constexpr std::size_t kSpareGroups = 64;
constexpr std::size_t kSpareGroupCapacity = 256;
constexpr std::size_t kSpareRows = 1024;
constexpr std::size_t kRowCapacity = 128;  // a row with a lease and a long owner fits
constexpr std::size_t kSpareRowCapacity = 512;

// Turns queued on a shard at once that take no allocation: a burst from each connection, the
// commits in flight, the timer's and the flush's turns, and Asio's post of the strand itself.
constexpr std::size_t kPostSlots = 64;

// The last of `spares`, or an empty vector with room for `size`.
template <typename T>
std::vector<T> take_spare(std::vector<std::vector<T>>& spares, std::size_t size) {
  std::vector<T> v;
  if (!spares.empty()) {
    v.swap(spares.back());
    spares.pop_back();
  }
  v.reserve(size);
  return v;
}

template <typename T>
void give_spare(std::vector<std::vector<T>>& spares, std::vector<T>& v) {
  v.clear();
  if (spares.size() < kSpareGroups && v.capacity() <= kSpareGroupCapacity) {
    spares.push_back(std::move(v));
  }
}

template <typename T>
void shrink_if_sparse(std::vector<T>& v) {
  if (v.capacity() > kShrinkAbove && v.size() * kShrinkFactor < v.capacity()) v.shrink_to_fit();
}

}  // namespace

Shard::Shard(EngineCore& core, TurnGate& turns)
    : core_(core),
      turns_(turns),
      post_memory_(std::make_unique<HandlerMemory>(kPostSlots)),
      strand_(boost::asio::make_strand(core.io)),
      idle_keep_(core.config.idle_keys / std::max<std::size_t>(core.config.shards, 1)),
      timer_(core.io),
      cluster_(core.config.cluster) {}

Shard::~Shard() {
  if (queued_.load(std::memory_order_relaxed) != 0) {
    spdlog::warn("a shard goes with {} turns never run: their memory stays", queued_.load());
    static_cast<void>(post_memory_.release());
  }
}

std::size_t Shard::KeyHash::operator()(std::string_view key) const {
  return std::hash<std::string_view>{}(key);
}

std::size_t Shard::KeyHash::operator()(const ActorRef& actor) const {
  return (*this)(actor->key());
}

bool Shard::KeyEq::operator()(const ActorRef& a, const ActorRef& b) const {
  return a->key() == b->key();
}

bool Shard::KeyEq::operator()(std::string_view key, const ActorRef& actor) const {
  return key == actor->key();
}

ActorRef Shard::actor(std::string_view key) {
  auto it = actors_.find(key);
  if (it == actors_.end()) {
    it = actors_.insert(KeyActor::create(core_, *this, key)).first;
    resident_.store(actors_.size(), std::memory_order_relaxed);
  }
  return *it;
}

ActorRef Shard::find(std::string_view key) const {
  auto it = actors_.find(key);
  return it == actors_.end() ? nullptr : *it;
}

void Shard::went_idle(KeyActor& actor, std::uint32_t mark) {
  idle_.push_back(Idle{ActorRef(&actor), mark});
  while (idle_.size() > idle_keep_) {
    Idle oldest = std::move(idle_.front());
    idle_.pop_front();
    if (oldest.actor->idle_since(oldest.mark)) retire(*oldest.actor);
  }
}

void Shard::retire(KeyActor& actor) {
  actor.retire();
  actors_.erase(actor.key());
  resident_.store(actors_.size(), std::memory_order_relaxed);
  if (actors_.bucket_count() > kShrinkAbove &&
      actors_.size() * kShrinkFactor < actors_.bucket_count()) {
    actors_.rehash(0);
  }
  // A wake-up still queued would keep the actor, and its memory, until its deadline.
  if (actor.wake_at() != 0 && ++retired_wakes_ * 2 > deadlines_.size()) drop_retired_wakes();
}

void Shard::drop_retired_wakes() {
  // Over-counts (entries popped at their deadline were counted too) only bring this forward.
  std::erase_if(deadlines_, [](const Deadline& d) { return d.actor->retired(); });
  std::make_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
  retired_wakes_ = 0;
  shrink_if_sparse(deadlines_);
}

void Shard::schedule(KeyActor& actor, Millis at) {
  if (timer_stopped_) return;
  deadlines_.push_back(Deadline{at, ActorRef(&actor)});
  std::push_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
  if (armed_at_ == 0 || at < armed_at_) arm(at);
}

void Shard::arm(Millis at) {
  armed_at_ = at;
  if (core_.config.manual_timers) return;
  Millis delay = std::max<Millis>(at - core_.clock.now(), 0);
  timer_.expires_after(std::chrono::milliseconds(delay));
  timer_.async_wait(boost::asio::bind_executor(
      strand_, turns_.counted([this](const boost::system::error_code& ec) {
        if (ec) return;
        fire_due();
        end_turn();
      })));
}

void Shard::fire_due() {
  if (timer_stopped_) return;
  Millis now = core_.clock.now();
  std::size_t woken = 0;
  while (!deadlines_.empty() && deadlines_.front().at <= now && woken < core_.config.expiry_batch) {
    std::pop_heap(deadlines_.begin(), deadlines_.end(), std::greater<>());
    Deadline due = std::move(deadlines_.back());
    deadlines_.pop_back();
    if (due.actor->retired()) continue;
    due.actor->wake(due.at);
    due.actor->maybe_retire();
    ++woken;
  }
  shrink_if_sparse(deadlines_);
  bool more_due = !deadlines_.empty() && deadlines_.front().at <= now;
  armed_at_ = 0;
  if (more_due) {
    // A backlog: its next batch waits for the ledger (BacklogPacer); with nothing in flight,
    // nothing would resume it, and it goes now.
    if (backlog_.next_batch_now(!staged_ops_.empty())) post([this] { fire_due(); });
  } else if (!deadlines_.empty()) {
    arm(deadlines_.front().at);
  }
}

void Shard::stage(KeyActor& actor, std::uint64_t seq, storage::WriteOp op) {
  staged_ops_.push_back(std::move(op));
  if (staged_by_ == nullptr) staged_by_ = take_staged_by(0);
  staged_by_->push_back(Staged{ActorRef(&actor), seq});
  if (staged_ops_.size() >= kMaxGroup) submit_staged();
}

void Shard::lost(ConnId conn, Event event) { lost_.emplace_back(conn, std::move(event)); }

void Shard::keep_untold(std::string_view key, Token token, ConnId conn) {
  untold_[std::string(key)].emplace_back(token, conn);
}

ConnId Shard::take_untold(std::string_view key, Token token) {
  if (untold_.empty()) return 0;
  auto found = untold_.find(std::string(key));
  if (found == untold_.end()) return 0;
  ConnId conn = 0;
  for (const auto& [kept, to] : found->second) {
    if (kept == token) conn = to;
  }
  untold_.erase(found);
  return conn;
}

std::vector<Shard::Staged>* Shard::take_staged_by(std::size_t size) {
  if (spare_by_.empty()) {
    staged_lists_.push_back(std::make_unique<std::vector<Staged>>());
    spare_by_.push_back(staged_lists_.back().get());
  }
  std::vector<Staged>* by = spare_by_.back();
  spare_by_.pop_back();
  by->reserve(size);
  return by;
}

std::string Shard::spare_row() {
  std::string row;
  if (spare_rows_.empty()) {
    row.reserve(kRowCapacity);
  } else {
    row.swap(spare_rows_.back());
    spare_rows_.pop_back();
  }
  return row;
}

void Shard::recycle(std::vector<Staged>& by, std::vector<storage::WriteOp>& written) {
  for (storage::WriteOp& op : written) {
    if (op.row && op.row->capacity() <= kSpareRowCapacity && spare_rows_.size() < kSpareRows) {
      spare_rows_.push_back(std::move(*op.row));
    }
  }
  give_spare(spare_ops_, written);
  by.clear();
  // The lists stay (as many as groups were ever in flight at once), and so do their buffers,
  // unless a big group grew them.
  if (by.capacity() > kSpareGroupCapacity) by.shrink_to_fit();
  spare_by_.push_back(&by);
}

void Shard::send_lost() {
  // By connection, in commit order within each: one call, and one post, per connection. The
  // notices are ordered by (connection, place), not moved about by a sort: an event is big.
  lost_order_.clear();
  for (std::size_t i = 0; i < lost_.size(); ++i) lost_order_.emplace_back(lost_[i].first, i);
  std::sort(lost_order_.begin(), lost_order_.end());
  for (auto it = lost_order_.begin(); it != lost_order_.end();) {
    auto end =
        std::find_if(it, lost_order_.end(), [&](const auto& l) { return l.first != it->first; });
    if (auto listener = core_.connections.find(it->first)) {
      std::vector<Event> events;
      events.reserve(static_cast<std::size_t>(end - it));
      for (auto l = it; l != end; ++l) events.push_back(std::move(lost_[l->second].second));
      listener->on_lost(std::move(events));
    }
    it = end;
  }
  lost_.clear();
  shrink_if_sparse(lost_);
  shrink_if_sparse(lost_order_);
}

void Shard::end_turn() {
  if (!lost_.empty()) send_lost();
  if (staged_ops_.empty()) return;
  if (queued_.load(std::memory_order_relaxed) == 0) {
    submit_staged();
    return;
  }
  if (flush_posted_) return;
  flush_posted_ = true;
  post([this] {
    flush_posted_ = false;
    submit_staged();
  });
}

void Shard::submit_staged() {
  if (staged_ops_.empty()) return;
  std::size_t ops_size = staged_ops_.size();
  std::vector<storage::WriteOp> ops;
  ops.swap(staged_ops_);
  // The next group is likely as big: room for it at once instead of a dozen regrowths.
  staged_ops_ = take_spare(spare_ops_, ops_size);
  backlog_.handed_over();
  core_.ledger->submit(std::move(ops),
                       [this, by = staged_by_](bool ok, std::vector<storage::WriteOp>& written) {
                         // On the ledger's commit thread: the actors' part runs on the strand, as
                         // one message.
                         post([this, by, ok, written = std::move(written)]() mutable {
                           for (std::size_t i = 0; i < by->size(); ++i) {
                             (*by)[i].actor->on_committed((*by)[i].seq, ok, written[i].events);
                             (*by)[i].actor->maybe_retire();
                           }
                           recycle(*by, written);
                           if (backlog_.answered()) fire_due();
                         });
                       });
  staged_by_ = take_staged_by(ops_size);
}

std::vector<ActorRef> Shard::actors() const { return {actors_.begin(), actors_.end()}; }

void Shard::drop_slot(std::uint32_t slot) {
  slots_ &= ~(std::uint64_t{1} << slot);
  boost::unordered_flat_set<KeyActor*> indexed;
  std::unordered_map<ConnId, std::vector<BoundTenure>> unowned;
  std::vector<ActorRef> resident = actors();  // keeps them alive until the index forgot them
  for (const ActorRef& actor : resident) {
    if (slot_of(actor->key()) != slot) continue;
    if (auto [conn, token] = actor->told_of(); conn != 0) {
      unowned[conn].push_back({std::string(actor->key()), token});
    }
    if (actor->drop()) indexed.insert(actor.get());
    retire(*actor);
  }
  owners_.forget(indexed);
  std::erase_if(untold_, [&](const auto& entry) {
    if (slot_of(entry.first) != slot) return false;
    for (const auto& [token, conn] : entry.second) unowned[conn].push_back({entry.first, token});
    return true;
  });
  for (auto& [conn, tenures] : unowned) tell_unowned(conn, std::move(tenures));
}

void Shard::unowned(ConnId conn, BoundTenure tenure) {
  std::vector<BoundTenure> tenures;
  tenures.push_back(std::move(tenure));
  tell_unowned(conn, std::move(tenures));
}

void Shard::tell_unowned(ConnId conn, std::vector<BoundTenure> tenures) {
  if (auto listener = core_.connections.find(conn)) listener->on_unowned(std::move(tenures));
}

void Shard::stop_timer() {
  timer_stopped_ = true;
  timer_.cancel();
  deadlines_ = {};
}

}  // namespace tenure
