#!/usr/bin/env bash
# tenure-bench against a real tenured: --mix hold leaves every lease live and ends; --mix expiry
# with --probe-interval and --server-pid times the probe's ping and acquire during the storm and
# reports the server's CPU per expiry, next to the exactly-once counts.
# Usage: tenure_bench_test.sh TENURED TENURE_BENCH
set -euo pipefail
tenured=$1 bench=$2
command -v jq >/dev/null || { echo "jq is not installed; skipped"; exit 77; }
dir=$(mktemp -d)
"$tenured" --data-dir "$dir/data" --ws-listen off --sync none --log-level warn 2>"$dir/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 200); do [[ -S $dir/data/tenured.sock ]] && break; sleep 0.05; done
sock=$dir/data/tenured.sock

fail() { echo "FAILED: $*"; exit 1; }

# hold: 500 leases acquired once each, still live when it returns.
timeout 60 "$bench" --socket "$sock" --mix hold --keys 500 --key-prefix hold/k --ttl 600000 \
  --connections 4 --pipeline 4 --warmup 0 --json >"$dir/hold.json"
[[ $(jq .outcomes.acquired "$dir/hold.json") == 500 ]] || fail "hold acquired $(cat "$dir/hold.json")"
[[ $(jq '.errors | length' "$dir/hold.json") == 0 ]] || fail "hold errors $(cat "$dir/hold.json")"

# expiry: 300 leases due within 300 ms, probed every 5 ms.
timeout 120 "$bench" --socket "$sock" --mix expiry --keys 300 --connections 4 --pipeline 4 \
  --warmup 0 --expire-window 300ms --expire-after 2s --watchers 1 --probe-interval 5ms \
  --server-pid "$pid" --json >"$dir/expiry.json"
e() { jq "$1" "$dir/expiry.json"; }
[[ $(e .expiry.lost.delivered) == 300 && $(e .expiry.watched.delivered) == 300 ]] ||
  fail "deliveries $(e .expiry)"
# The storm lasts at least its 300 ms window, so a probe every 5 ms runs dozens of times.
(($(e .expiry.probe.ping_us.count) >= 20)) || fail "pings $(e .expiry.probe)"
(($(e .expiry.probe.acquire_us.count) >= 20)) || fail "acquires $(e .expiry.probe)"
(($(e .expiry.probe.release_us.count) == $(e .expiry.probe.acquire_us.count))) ||
  fail "releases $(e .expiry.probe)"
[[ $(e .expiry.server_cpu_us_per_expiry) != null ]] || fail "no server CPU $(e .expiry)"
jq -e '.expiry.storm_s >= 0.2' "$dir/expiry.json" >/dev/null || fail "storm $(e .expiry.storm_s)"
[[ $(e '.errors | length') == 0 ]] || fail "expiry errors $(e .errors)"
echo "hold and expiry probe: ok"
