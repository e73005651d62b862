#pragma once
// What the actors of one engine share. Internal to actors/.
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <memory>

#include "actors/connection_directory.hpp"
#include "actors/engine.hpp"
#include "actors/event_bus.hpp"
#include "actors/owner_index.hpp"
#include "actors/registry.hpp"
#include "actors/turn_gate.hpp"
#include "storage/ledger.hpp"

namespace tenure {

struct EngineCounters {
  std::atomic<std::int64_t> live_leases{0};
  std::atomic<std::int64_t> waiters{0};
  std::atomic<std::uint64_t> expired{0};
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(OpKind::count)> ops{};
  std::array<std::atomic<std::uint64_t>, 16> expiry_lateness_ms_log2{};
  std::atomic<std::uint64_t> expiry_lateness_ms_sum{0};
};

struct EngineCore {
  EngineCore(boost::asio::io_context& io, const Clock& clock, EngineConfig config,
             std::unique_ptr<storage::Ledger> ledger)
      : io(io),
        clock(clock),
        config(std::move(config)),
        ledger(std::move(ledger)),
        registry(*this, this->config.shards) {}

  boost::asio::io_context& io;
  const Clock& clock;
  const EngineConfig config;
  std::unique_ptr<storage::Ledger> ledger;
  EventBus bus;
  // Before the registry: its timers' handlers hold tickets.
  TurnGate turns;
  Registry registry;
  ConnectionDirectory connections;
  OwnerIndex owners;
  EngineCounters counters;
};

}  // namespace tenure
