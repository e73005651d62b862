#include "bench/load/report.hpp"

#include <cstdio>
#include <string>

#include "core/json_writer.hpp"

namespace tenure::bench {
namespace {

struct Percentile {
  const char* name;
  double percent;
};
constexpr Percentile kPercentiles[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99_9", 99.9}};

std::string fixed(double v, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

double per_second(std::uint64_t n, double seconds) {
  return seconds > 0 ? static_cast<double>(n) / seconds : 0;
}

std::string percentiles_text(const Histogram& h) {
  std::string out;
  for (const auto& p : kPercentiles) {
    std::string name = p.name;
    if (name == "p99_9") name = "p99.9";
    out += name + " " + std::to_string(h.percentile(p.percent)) + "  ";
  }
  return out + "max " + std::to_string(h.max());
}

void percentiles_json(JsonWriter& w, std::string_view name, const Histogram& h) {
  w.key(name).begin_object().field("count", h.count());
  for (const auto& p : kPercentiles) w.field(p.name, h.percentile(p.percent));
  w.field("max", h.max()).end_object();
}

std::string deliveries_text(const Deliveries& d, std::uint64_t expected) {
  return std::to_string(d.delivered) + " of " + std::to_string(expected) + " delivered, " +
         std::to_string(d.duplicates) + " duplicates, " + std::to_string(d.unexpected) +
         " unexpected; lateness ms " + percentiles_text(d.lateness);
}

void deliveries_json(JsonWriter& w, std::string_view name, const Deliveries& d) {
  w.key(name).begin_object().field("delivered", d.delivered).field("duplicates", d.duplicates);
  w.field("unexpected", d.unexpected);
  percentiles_json(w, "lateness_ms", d.lateness);
  w.end_object();
}

std::string deadlines(const Config& c) {
  if (c.expire_window.count() == 0) return "TTL " + std::to_string(c.ttl_ms) + " ms";
  return "deadlines over " + fixed(static_cast<double>(c.expire_window.count()) / 1e3, 1) +
         " s from " + fixed(static_cast<double>(c.expire_after.count()) / 1e3, 1) +
         " s after the start";
}

std::string mode(const Config& c) {
  if (c.rate) return "open loop at " + fixed(*c.rate, 0) + " ops/s";
  return "closed loop";
}

double cpu_us_per_expiry(const RunResult& r) {
  std::uint64_t n = r.stats.leases_to_expire;
  return n > 0 ? r.server_cpu_seconds * 1e6 / static_cast<double>(n) : 0;
}

}  // namespace

void print_text(std::ostream& out, const Config& c, const RunResult& r) {
  const Stats& s = r.stats;
  out << "tenure-bench: " << to_string(c.target) << ", " << to_string(c.mix) << ", " << describe(c)
      << ", " << c.connections << " connections x pipeline " << c.pipeline << ", " << mode(c)
      << ", " << fixed(r.seconds, 1) << " s measured\n";
  out << "  ops/s       " << fixed(per_second(s.ops, r.seconds), 0) << "  (" << s.ops
      << " ops; lock cycles/s " << fixed(per_second(s.cycles, r.seconds), 0) << ")\n";
  out << "  latency us  " << percentiles_text(s.latency) << "\n";
  if (c.mix == Mix::contended || c.mix == Mix::waiters) {
    out << "  lock wait us " << percentiles_text(s.lock_wait) << "\n";
  }
  out << "  outcomes    acquired " << s.acquired << ", held " << s.held << ", renewed " << s.renewed
      << ", released " << s.released << ", not_holder " << s.not_holder << "\n";
  out << "  errors      ";
  if (s.errors.empty()) out << "none";
  for (const auto& [kind, n] : s.errors) out << kind << " " << n << "  ";
  out << "\n  safety      " << r.checked << " acquires checked: " << r.double_grants
      << " double grants, " << r.token_regressions << " token regressions\n";
  if (c.mix == Mix::expiry && c.target == Target::tenure) {
    out << "  expiry      " << s.leases_to_expire << " leases (" << s.expiry_skipped
        << " keys skipped: acquired too late), " << deadlines(c) << "; last acquired "
        << fixed(r.acquire_seconds, 1) << " s after the start\n";
    out << "  lost        " << deliveries_text(s.lost, s.leases_to_expire) << "\n";
    if (c.watchers > 0) {
      out << "  watched     " << c.watchers << " watchers, lagged and resumed " << s.watch_lags
          << " times: " << deliveries_text(s.watched, s.leases_to_expire * c.watchers) << "\n";
    }
    if (c.probe_interval.count() > 0) {
      out << "  probe       every " << c.probe_interval.count() << " ms during the storm ("
          << fixed(r.storm_seconds, 1) << " s), us from when due: ping "
          << percentiles_text(s.probe_ping) << "\n              acquire "
          << percentiles_text(s.probe_acquire) << "\n              release "
          << percentiles_text(s.probe_release) << "\n";
    }
    if (r.server_cpu_seconds >= 0) {
      out << "  server CPU  " << fixed(r.server_cpu_seconds, 2) << " s over the storm ("
          << fixed(r.storm_seconds, 1) << " s): " << fixed(cpu_us_per_expiry(r), 1)
          << " us per lease expired\n";
    }
  }
}

void print_json(std::ostream& out, const Config& c, const RunResult& r) {
  const Stats& s = r.stats;
  std::string text;
  JsonWriter w(text);
  w.begin_object().field("target", to_string(c.target)).field("mix", to_string(c.mix));
  w.field("keys", describe(c)).field("connections", static_cast<std::uint64_t>(c.connections));
  w.field("pipeline", static_cast<std::uint64_t>(c.pipeline));
  w.key("rate");
  if (c.rate) {
    w.raw(fixed(*c.rate, 1));
  } else {
    w.null();
  }
  w.key("seconds").raw(fixed(r.seconds, 3));
  w.field("ops", s.ops).key("ops_per_s").raw(fixed(per_second(s.ops, r.seconds), 1));
  w.field("cycles", s.cycles).key("cycles_per_s").raw(fixed(per_second(s.cycles, r.seconds), 1));
  percentiles_json(w, "latency_us", s.latency);
  percentiles_json(w, "lock_wait_us", s.lock_wait);
  w.key("outcomes").begin_object().field("acquired", s.acquired).field("held", s.held);
  w.field("renewed", s.renewed).field("released", s.released).field("not_holder", s.not_holder);
  w.end_object().key("errors").begin_object();
  for (const auto& [kind, n] : s.errors) w.field(kind, n);
  w.end_object().key("safety").begin_object().field("checked", r.checked);
  w.field("double_grants", r.double_grants).field("token_regressions", r.token_regressions);
  w.end_object().key("expiry").begin_object().field("leases", s.leases_to_expire);
  w.field("skipped", s.expiry_skipped).field("ttl_ms", c.ttl_ms);
  w.field("window_ms", static_cast<std::int64_t>(c.expire_window.count()));
  w.field("window_after_ms", static_cast<std::int64_t>(c.expire_after.count()));
  w.key("acquire_s").raw(fixed(r.acquire_seconds, 3));
  deliveries_json(w, "lost", s.lost);
  w.field("watchers", static_cast<std::uint64_t>(c.watchers)).field("watch_lags", s.watch_lags);
  deliveries_json(w, "watched", s.watched);
  w.key("storm_s").raw(fixed(r.storm_seconds, 3));
  w.key("server_cpu_s");
  if (r.server_cpu_seconds >= 0) {
    w.raw(fixed(r.server_cpu_seconds, 3));
    w.key("server_cpu_us_per_expiry").raw(fixed(cpu_us_per_expiry(r), 2));
  } else {
    w.null();
    w.key("server_cpu_us_per_expiry").null();
  }
  w.key("probe").begin_object();
  w.field("interval_ms", static_cast<std::int64_t>(c.probe_interval.count()));
  percentiles_json(w, "ping_us", s.probe_ping);
  percentiles_json(w, "acquire_us", s.probe_acquire);
  percentiles_json(w, "release_us", s.probe_release);
  w.end_object();
  w.end_object().end_object();
  out << text << "\n";
}

}  // namespace tenure::bench
