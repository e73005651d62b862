#pragma once
// What the shards and actors of one engine share. Internal to actors/.
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <vector>

#include "actors/connection_directory.hpp"
#include "actors/engine.hpp"
#include "actors/event_bus.hpp"
#include "actors/shard.hpp"
#include "actors/turn_gate.hpp"
#include "storage/ledger_store.hpp"

namespace tenure {

// Why a cluster node turns a request away: another node owns (or is taking over) its key.
inline constexpr const char* kKeyMoved = "the key moved to another node; retry";

struct EngineCounters {
  std::atomic<std::int64_t> live_leases{0};
  std::atomic<std::int64_t> waiters{0};
  std::atomic<std::uint64_t> expired{0};
  std::array<std::atomic<std::uint64_t>, protocol::kEngineOpCount> ops{};
  std::array<std::atomic<std::uint64_t>, 16> expiry_lateness_ms_log2{};
  std::atomic<std::uint64_t> expiry_lateness_ms_sum{0};
};

struct EngineCore {
  EngineCore(boost::asio::io_context& io, const Clock& clock, EngineConfig config,
             std::unique_ptr<storage::LedgerStore> ledger)
      : io(io), clock(clock), config(std::move(config)), ledger(std::move(ledger)) {
    std::size_t n = std::max<std::size_t>(this->config.shards, 1);
    shards.reserve(n);
    for (std::size_t i = 0; i < n; ++i) shards.push_back(std::make_unique<Shard>(*this, turns));
  }

  std::size_t shard_index(std::string_view key) const {
    return std::hash<std::string_view>{}(key) % shards.size();
  }
  Shard& shard_of(std::string_view key) const { return *shards[shard_index(key)]; }

  boost::asio::io_context& io;
  const Clock& clock;
  const EngineConfig config;
  std::unique_ptr<storage::LedgerStore> ledger;
  EventBus bus;
  // Before the shards: their queued turns and timers' handlers hold tickets.
  TurnGate turns;
  std::vector<std::unique_ptr<Shard>> shards;
  ConnectionDirectory connections;
  EngineCounters counters;
};

}  // namespace tenure
