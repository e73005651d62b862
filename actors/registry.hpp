#pragma once
// Keys to resident actors, in shards with a lock each (no global lock on the lease path), and a
// deadline queue per shard whose one steady_timer posts wake-ups to the actors' strands.
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <memory>
#include <mutex>
#include <queue>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.hpp"

namespace tenure {

class KeyActor;
struct EngineCore;

class Registry {
 public:
  Registry(EngineCore& core, std::size_t shards);
  ~Registry();

  // The key's actor, created (unloaded) if not resident, with one reference taken for the
  // caller's message; the message gives it back with KeyActor::unref.
  std::shared_ptr<KeyActor> ref(std::string_view key);
  // The resident actor with a reference taken, or null.
  std::shared_ptr<KeyActor> find_ref(std::string_view key);
  // Drops the actor if nobody holds a reference. REQUIRES: on the actor's strand.
  bool retire(KeyActor& actor);

  // Wakes the actor at `at` (clock time).
  void schedule(std::shared_ptr<KeyActor> actor, Millis at);
  // Posts wake-ups for every deadline due by the clock now.
  void fire_due();
  void cancel_timers();

  // Actors share a fixed pool of strands (by key hash): a key still runs on exactly one strand,
  // but a resident key does not pay for a strand of its own.
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  const Strand& strand_for(std::string_view key) const;

  std::size_t resident() const;
  std::vector<std::shared_ptr<KeyActor>> snapshot() const;

 private:
  struct Deadline {
    Millis at;
    std::shared_ptr<KeyActor> actor;
    bool operator>(const Deadline& other) const { return at > other.at; }
  };
  struct Shard {
    explicit Shard(boost::asio::io_context& io) : timer(io) {}
    mutable std::mutex mutex;
    std::unordered_map<std::string_view, std::shared_ptr<KeyActor>> actors;  // views into keys
    std::mutex timer_mutex;
    std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines;
    boost::asio::steady_timer timer;
    Millis armed_at = 0;  // 0: not armed
    bool stopped = false;
  };

  Shard& shard_of(std::string_view key);
  void arm(Shard& shard, Millis at);  // REQUIRES: shard.timer_mutex held
  void fire_shard(Shard& shard);

  EngineCore& core_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<Strand> strands_;
};

}  // namespace tenure
