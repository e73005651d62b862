#pragma once
// Keys to resident actors, in shards with a lock each (no global lock on the lease path), and a
// deadline queue per shard whose one steady_timer posts wake-ups to the actors' strands.
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/unordered/unordered_flat_set.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "actors/actor_ref.hpp"
#include "core/clock.hpp"

namespace tenure {

struct EngineCore;

class Registry {
 public:
  Registry(EngineCore& core, std::size_t shards);
  ~Registry();

  // The key's actor, created (unloaded) if not resident, with one reference taken for the
  // caller's message; the message gives it back once it has run.
  ActorRef ref(std::string_view key);
  // The resident actor with a reference taken, or null.
  ActorRef find_ref(std::string_view key);
  // Drops the actor if nobody holds a reference. REQUIRES: on the actor's strand.
  bool retire(KeyActor& actor);

  // Wakes the actor at `at` (clock time).
  void schedule(ActorRef actor, Millis at);
  // A retired actor of `key` left wake-ups queued: they are dropped in bulk once such entries
  // make up half the shard's queue (so retired actors are freed long before their deadlines).
  void drop_wakes(std::string_view key);
  // Posts wake-ups for every deadline due by the clock now.
  void fire_due();
  void cancel_timers();

  // Actors share a fixed pool of strands (by key hash): a key still runs on exactly one strand,
  // but a resident key does not pay for a strand of its own.
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  const Strand& strand(std::uint16_t index) const { return strands_[index]; }

  std::size_t resident() const;
  std::vector<ActorRef> snapshot() const;

 private:
  struct Deadline {
    Millis at;
    ActorRef actor;
    bool operator>(const Deadline& other) const { return at > other.at; }
  };
  // The actors themselves are the set's elements, looked up by their own key: the key is not
  // stored a second time, and open addressing costs no node per actor.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const;
    std::size_t operator()(const ActorRef& actor) const;
  };
  struct KeyEq {
    using is_transparent = void;
    bool operator()(const ActorRef& a, const ActorRef& b) const;
    bool operator()(std::string_view key, const ActorRef& actor) const;
    bool operator()(const ActorRef& actor, std::string_view key) const {
      return (*this)(key, actor);
    }
  };
  struct Shard {
    explicit Shard(boost::asio::io_context& io) : timer(io) {}
    mutable std::mutex mutex;
    boost::unordered_flat_set<ActorRef, KeyHash, KeyEq> actors;
    std::mutex timer_mutex;
    std::vector<Deadline> deadlines;  // a min-heap on `at`
    std::size_t retired_wakes = 0;    // entries of retired actors, about (see drop_wakes)
    boost::asio::steady_timer timer;
    Millis armed_at = 0;  // 0: not armed
    bool stopped = false;
  };

  Shard& shard_of(std::string_view key);
  std::uint16_t strand_index(std::string_view key) const;
  void arm(Shard& shard, Millis at);  // REQUIRES: shard.timer_mutex held
  void fire_shard(Shard& shard);

  EngineCore& core_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<Strand> strands_;
};

}  // namespace tenure
