# shellcheck shell=bash disable=SC2034  # the variables are for the sourcing scripts
# bench/lib.sh: what bench/compare, bench/expiry and bench/big-ledger share. Sourced, not run.
# The sourcing script sets NAME (its log prefix) first.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-bench}
BENCH=$BUILD_DIR/bench/tenure-bench
TENURED=${TENURED:-$BUILD_DIR/apps/tenured/tenured}  # another build: bench/expiry A/B
ALLOC_COUNT=$BUILD_DIR/bench/libtenure-alloc-count.so

log() { echo "$NAME: $*" >&2; }

# install_missing COMMAND:PACKAGE...: installs the Debian packages of the commands not found,
# besides what every script needs (jq, cmake, ninja, curl).
install_missing() {
  local missing=() pair
  for pair in jq:jq cmake:cmake ninja:ninja-build curl:curl "$@"; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
  done
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# build: tenured, tenure-bench and the allocation counter, into BUILD_DIR (Release RocksDB
# unless TENURE_ROCKSDB says otherwise).
build() {
  log "building tenured and tenure-bench in $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTENURE_ROCKSDB="${TENURE_ROCKSDB:-source}" >/dev/null
  ninja -C "$BUILD_DIR" -j2 tenured tenure-bench tenure-alloc-count >/dev/null
}

# wait_for PID WHAT: waits up to 20 s for a Unix socket file or a loopback TCP port to be up.
wait_for() {
  local pid=$1 what=$2
  for _ in $(seq 200); do
    if [[ $what == /* ]]; then
      [[ -S $what ]] && return 0
    elif (exec 3<>"/dev/tcp/127.0.0.1/$what") 2>/dev/null; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { log "server exited; see $WORK"; return 1; }
    sleep 0.1
  done
  log "timed out waiting for $what"
  return 1
}

free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

# cpu_ticks PID: the process's user + system CPU time, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# ctxt_switches PID: the voluntary and involuntary context switches of all the process's threads.
ctxt_switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ {n += $2} END {print n + 0}'
}

# group_commits METRICS_URL: a tenured's group commits so far (its WAL syncs with --sync always).
group_commits() { curl -sf "$1" | awk '/^tenure_commit_batch_size_count/ {print $2}'; }

# rss_kib PID: the process's resident set, in KiB.
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# seconds DURATION: 2s, 500ms or 1m in seconds, for sleep.
seconds() {
  case $1 in
    *ms) jq -n "${1%ms} / 1000" ;;
    *s) echo "${1%s}" ;;
    *m) echo $((${1%m} * 60)) ;;
    *) echo "$1" ;;
  esac
}

# stop_pids PID...: SIGTERM, then SIGKILL after 10 s for a server that ignores it.
stop_pids() {
  local pid
  for pid in "$@"; do kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 100); do
    local alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "$@"; do
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
