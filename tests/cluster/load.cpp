#include "tests/cluster/load.hpp"

#include <unistd.h>

#include <optional>
#include <random>

#include "tests/cluster/cluster.hpp"
#include "tests/e2e/e2e.hpp"

namespace cluster {

namespace {

struct Holding {
  std::string key;
  std::uint64_t token = 0;
  std::int64_t expires_at = 0;
  bool renew_next = true;  // renew once while holding, and first thing after a reconnect
  bool carried = false;    // the connection it was granted on broke since
  bool release_sent = false;
};

}  // namespace

Load::Load(FencingChecker& checker, LoadOptions options,
           std::vector<std::vector<std::string>> sockets_per_worker)
    : checker_(checker), options_(std::move(options)) {
  for (std::size_t i = 0; i < sockets_per_worker.size(); ++i) {
    threads_.emplace_back([this, i, sockets = std::move(sockets_per_worker[i])] {
      run(static_cast<int>(i), sockets);
    });
  }
}

Load::~Load() { stop(); }

void Load::stop() {
  stop_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Load::fail(std::string what) {
  std::lock_guard lock(mutex_);
  failures_.push_back(std::move(what));
}

std::vector<std::string> Load::failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

std::string Load::summary() const {
  return "acquired " + std::to_string(counters_.acquired) + ", held " +
         std::to_string(counters_.held) + ", released " + std::to_string(counters_.released) +
         ", unavailable " + std::to_string(counters_.unavailable) + ", reconnects " +
         std::to_string(counters_.reconnects) + ", renewed after a reconnect " +
         std::to_string(counters_.carried_renewed);
}

bool Load::wait_progress(std::uint64_t n, e2e::Millis timeout) const {
  std::uint64_t target = counters_.acquired + n;
  return e2e::wait_until([&] { return counters_.acquired >= target; }, timeout);
}

void Load::run(int worker, std::vector<std::string> sockets) {
  std::mt19937 rng(static_cast<unsigned>(worker) * 7919u + 17u);
  Sequence sequence{"load worker " + std::to_string(worker)};
  const std::string owner = "load-" + std::to_string(::getpid()) + "-" + std::to_string(worker);
  // Odd workers queue for a held key (FIFO hand-over across nodes); even ones retry.
  const std::int64_t wait_ms = worker % 2 ? 1000 : 0;
  std::optional<e2e::LineClient> conn;
  std::size_t at = 0;
  std::optional<Holding> hold;

  auto call = [&](const std::string& body, e2e::Millis extra = e2e::Millis(0)) {
    e2e::Json reply = conn->call(body, options_.reply_timeout + extra);
    checker_.on_reply(reply, &sequence);
    return reply;
  };
  auto unavailable = [&](const e2e::Json& reply) {
    if (outcome(reply) != "error:unavailable") return false;
    ++counters_.unavailable;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return true;
  };
  // A refusal while the deadline is clearly ahead (after the reply came) breaks §10.
  auto refused_early = [&](const e2e::Json& reply, const char* op) {
    if (e2e::wall_now_ms() + 100 < hold->expires_at && !hold->release_sent) {
      fail(sequence.name + ": " + op + " of " + hold->key + " token " +
           std::to_string(hold->token) + " refused before its deadline " +
           std::to_string(hold->expires_at) + (hold->carried ? " (after a reconnect)" : "") + ": " +
           reply.source());
    }
  };

  while (!stop_) {
    if (!conn) {
      for (std::size_t k = 0; k < sockets.size() && !conn; ++k) {
        conn = e2e::LineClient::try_connect(sockets[at]);
        if (!conn) at = (at + 1) % sockets.size();
      }
      if (!conn) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
    }
    try {
      if (hold && e2e::wall_now_ms() >= hold->expires_at) hold.reset();  // ran out meanwhile
      if (hold && hold->renew_next) {
        e2e::Json r =
            call(e2e::renew_req(hold->key, owner, "\"token\":" + std::to_string(hold->token)));
        if (r["status"] == "renewed") {
          hold->expires_at = e2e::time_ms(r["expires_at"]).value_or(0);
          hold->renew_next = false;
          if (hold->carried) ++counters_.carried_renewed;
        } else if (!unavailable(r)) {
          if (r["status"] == "not_holder") {
            refused_early(r, "renew");
          } else {
            fail(sequence.name + ": unexpected reply to renew: " + r.source());
          }
          hold.reset();
        }
        continue;
      }
      if (hold) {
        checker_.release_sent(hold->key, hold->token);
        hold->release_sent = true;
        e2e::Json r =
            call(e2e::release_req(hold->key, owner, "\"token\":" + std::to_string(hold->token)));
        if (r["status"] == "released") {
          ++counters_.released;
          hold.reset();
        } else if (!unavailable(r)) {
          if (r["status"] != "not_holder") {
            fail(sequence.name + ": unexpected reply to release: " + r.source());
          }
          hold.reset();
        }
        continue;
      }
      const std::string& key = options_.keys[rng() % options_.keys.size()];
      std::string extra = "\"ttl_ms\":" + std::to_string(options_.ttl_ms);
      if (wait_ms) extra += ",\"wait_ms\":" + std::to_string(wait_ms);
      e2e::Json r = call(e2e::acquire_req(key, owner, extra), e2e::Millis(wait_ms));
      if (r["status"] == "acquired") {
        ++counters_.acquired;
        hold = Holding{key, r["token"].u64(), e2e::time_ms(r["expires_at"]).value_or(0)};
        std::this_thread::sleep_for(
            e2e::Millis(rng() % static_cast<unsigned>(options_.max_hold.count() + 1)));
      } else if (r["status"] == "held") {
        ++counters_.held;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      } else if (!unavailable(r)) {
        fail(sequence.name + ": unexpected reply to acquire: " + r.source());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } catch (const std::runtime_error&) {
      // The node died, stalled or closed the connection: go on through the next one.
      conn.reset();
      at = (at + 1) % sockets.size();
      ++counters_.reconnects;
      if (hold) {
        hold->carried = true;
        hold->renew_next = !hold->release_sent;
      }
    }
  }
}

}  // namespace cluster
