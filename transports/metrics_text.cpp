#include "transports/metrics_text.hpp"

#include <fmt/format.h>

#include <optional>
#include <span>

#include "transports/process_stats.hpp"

namespace tenure {
namespace {

class Exposition {
 public:
  // Every name gets `prefix`: the server's own metrics are tenure_*, the standard ones are not.
  explicit Exposition(std::string& out, std::string_view prefix = "tenure_")
      : out_(out), prefix_(prefix) {}

  Exposition& family(std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(out_), "# HELP {}{} {}\n# TYPE {}{} {}\n", prefix_, name,
                   help, prefix_, name, type);
    return *this;
  }
  template <typename Value>
  Exposition& sample(std::string_view name, std::string_view labels, Value value) {
    if (labels.empty()) {
      fmt::format_to(std::back_inserter(out_), "{}{} {}\n", prefix_, name, value);
    } else {
      fmt::format_to(std::back_inserter(out_), "{}{}{{{}}} {}\n", prefix_, name, labels, value);
    }
    return *this;
  }
  template <typename Value>
  Exposition& single(std::string_view name, std::string_view type, std::string_view help,
                     Value value) {
    return family(name, type, help).sample(name, "", value);
  }
  // A histogram of counts in buckets whose upper bounds are `bounds` (the last bucket is +Inf),
  // and the sum of the values counted.
  Exposition& histogram(std::string_view name, std::string_view help,
                        std::span<const std::uint64_t> counts, const std::vector<double>& bounds,
                        double sum) {
    family(name, "histogram", help);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      cumulative += counts[i];
      std::string le = i < bounds.size() ? fmt::format("{}", bounds[i]) : "+Inf";
      sample(std::string(name) + "_bucket", fmt::format("le=\"{}\"", le), cumulative);
    }
    sample(std::string(name) + "_sum", "", sum);
    return sample(std::string(name) + "_count", "", cumulative);
  }

 private:
  std::string& out_;
  std::string_view prefix_;
};

// Inclusive upper bounds, divided by `units` (1000 for milliseconds in seconds), of log2 buckets
// of integers in which bucket i holds values up to 2^(i+shift) - 1; the last bucket is unbounded.
// Dividing, not multiplying by 1e-3, gives the double nearest the decimal, so the bounds print as
// le="0.255", not le="0.25500000000000006".
std::vector<double> log2_bounds(std::size_t buckets, std::size_t shift, double units) {
  std::vector<double> bounds;
  for (std::size_t i = 0; i + 1 < buckets; ++i) {
    bounds.push_back(static_cast<double>((std::uint64_t{1} << (i + shift)) - 1) / units);
  }
  return bounds;
}

void engine_metrics(Exposition& e, const EngineStats& s) {
  e.single("revision", "gauge", "Revision of the last committed event.", s.revision);
  e.single("oldest_revision", "gauge", "Oldest revision the event log still keeps.",
           s.oldest_revision);
  e.single("live_leases", "gauge", "Leases currently held.", s.live_leases);
  e.single("resident_keys", "gauge", "Keys held in memory (leases, waiters, recent use).",
           s.resident_keys);
  e.single("waiters", "gauge", "Acquires waiting in key queues.", s.waiters);
  e.single("pending_turns", "gauge",
           "Actor turns queued on the io threads, plus armed expiry timers: the engine's backlog.",
           s.pending_turns);
  e.single("shard_messages_total", "counter",
           "Messages posted to the engine's shards: requests (one per shard per read burst of a "
           "connection), commits, timer continuations.",
           s.shard_posts);
  e.single("leases_expired_total", "counter", "Leases ended by their timer.", s.expired);
  e.single("ledger_healthy", "gauge", "1 while the ledger accepts writes, else 0.",
           s.healthy ? 1 : 0);
  e.family("engine_ops_total", "counter", "Requests admitted by the engine, by operation.");
  for (std::size_t op = 0; op < s.ops.size(); ++op) {
    e.sample("engine_ops_total",
             fmt::format("op=\"{}\"", protocol::to_string(static_cast<protocol::Op>(op))),
             s.ops[op]);
  }
  // Lateness bucket i holds whole milliseconds of bit width i; writer bucket i holds [2^i,
  // 2^(i+1)).
  e.histogram("expiry_lateness_seconds", "How long after its deadline the timer ended a lease.",
              s.expiry_lateness_ms_log2, log2_bounds(s.expiry_lateness_ms_log2.size(), 0, 1e3),
              static_cast<double>(s.expiry_lateness_ms_sum) / 1e3);
  e.histogram("commit_batch_size",
              "Writes made durable per WAL sync (per WriteBatch with --sync none).",
              s.writer.batch_size_log2, log2_bounds(s.writer.batch_size_log2.size(), 1, 1),
              static_cast<double>(s.writer.ops));
  e.histogram("commit_write_seconds", "Time to write and sync one group commit.",
              s.writer.write_us_log2, log2_bounds(s.writer.write_us_log2.size(), 1, 1e6),
              static_cast<double>(s.writer.write_us_sum) / 1e6);
  e.single("commit_failures_total", "counter", "Group commits the ledger refused.",
           s.writer.failures);
  e.single("commit_conflicts_total", "counter",
           "Cluster mode: transactions sent again because another node wrote first.",
           s.writer.conflicts);
  e.single("commit_writer_wakeups_total", "counter",
           "Times the ledger's writer thread woke to look for work: compare with commits to see "
           "wake-ups that found nothing.",
           s.writer.writer_wakeups);
  e.single("commit_groups_here_total", "counter",
           "Groups committed by the thread that submitted them, at light load, without a "
           "hand-off to the ledger's writer and sync threads.",
           s.writer.committed_here);
}

// The process_* metrics of Prometheus's client libraries, with the prefix every name here has
// (§7a): tenure_process_*.
void process_metrics(std::string& out) {
  auto s = read_process_stats();
  if (!s) return;
  Exposition e(out, "tenure_process_");
  e.single("start_time_seconds", "gauge", "Start time of the process since the Unix epoch.",
           s->start_time_seconds);
  e.single("cpu_seconds_total", "counter", "User and system CPU time spent.", s->cpu_seconds);
  e.single("resident_memory_bytes", "gauge", "Resident memory size.", s->resident_memory_bytes);
  e.single("virtual_memory_bytes", "gauge", "Virtual memory size.", s->virtual_memory_bytes);
  e.single("open_fds", "gauge", "Open file descriptors.", s->open_fds);
  e.single("max_fds", "gauge", "Limit of open file descriptors.", s->max_fds);
}

// The op label of a row of TransportMetrics::replies.
std::string_view op_label(std::size_t op) {
  if (op == TransportMetrics::kInvalid) return "invalid";
  return protocol::to_string(static_cast<protocol::Op>(op));
}

void transport_metrics(Exposition& e, const ServerContext& context, std::size_t http) {
  const TransportMetrics& m = context.metrics;
  e.family("replies_total", "counter", "Replies sent, by operation and status.");
  for (std::size_t op = 0; op < TransportMetrics::kOps; ++op) {
    for (std::size_t status = 0; status < TransportMetrics::kStatuses; ++status) {
      std::uint64_t n = m.replies[op][status].load();
      if (n == 0) continue;
      e.sample("replies_total",
               fmt::format("op=\"{}\",status=\"{}\"", op_label(op),
                           to_string(static_cast<ReplyStatus>(status))),
               n);
    }
  }
  e.family("errors_total", "counter", "Error replies sent, by code.");
  for (std::size_t code = 0; code < kErrcCount; ++code) {
    e.sample("errors_total", fmt::format("code=\"{}\"", to_string(static_cast<errc>(code))),
             m.errors[code].load());
  }
  e.family("connections", "gauge", "Open client connections, by transport.");
  for (auto transport : {Transport::unix_socket, Transport::websocket}) {
    e.sample("connections", fmt::format("transport=\"{}\"", to_string(transport)),
             context.registry.size(transport));
  }
  e.sample("connections", "transport=\"http\"", http);
  EventBus& events = context.engine.events();
  e.single("watchers", "gauge", "Active watches.", events.subscribers());
  e.single("events_published_total", "counter", "Events committed and published to watchers.",
           events.published());
  e.single("watch_events_sent_total", "counter", "Events queued to watching clients.",
           m.events_sent.load());
  e.single("watch_events_dropped_total", "counter",
           "Events lagging watches did not get (they resume from the lagged revision).",
           m.events_dropped.load());
  e.single("watches_lagged_total", "counter", "Watches cancelled because the client lagged.",
           m.watches_lagged.load());
}

}  // namespace

std::string metrics_text(const ServerContext& context, std::size_t http_connections) {
  std::string out;
  Exposition e(out);
  Millis uptime = context.engine.clock().now() - context.started_at;
  e.family("build_info", "gauge", "The server's version.");
  e.sample("build_info", fmt::format("version=\"{}\"", TENURE_VERSION), 1);
  e.single("uptime_seconds", "gauge", "Seconds since the server started.",
           static_cast<double>(uptime) / 1000.0);
  engine_metrics(e, context.engine.stats());
  transport_metrics(e, context, http_connections);
  process_metrics(out);
  return out;
}

}  // namespace tenure
