#!/usr/bin/env bash
# ThreadSanitizer. Builds into build-tsan/ (or $TSAN_BUILD_DIR) what runs threads of ours:
# tenured, the in-process tests (unit, transport), the C++ client library's tests (its keepalive
# thread, against the TSan-built tenured), and the etcd client's tests when the cluster tests run.
# The end-to-end and cluster tests only drive tenured: they run from the release build in
# $BUILD_DIR (default build/, made by scripts/build.sh first) against the TSan-built tenured
# (TENURE_E2E_TENURED), so that a race in the daemon is still found and the drivers are not built
# twice. Every e2e group runs (or those in $TSAN_E2E, e.g. "ops watch"); then, alone, the cluster
# tests (3 etcd members and 3 TSan-built nodes; TSAN_CLUSTER=0 skips them). The first race
# reported stops the process that found it, so the test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TSAN_BUILD_DIR:-build-tsan}
drivers_dir=${BUILD_DIR:-build}
groups=${TSAN_E2E:-[a-z_]+}
cluster=${TSAN_CLUSTER:-1}
[[ -x $drivers_dir/tests/e2e/tenure_e2e ]] || {
  echo "tsan.sh: no release build in $drivers_dir (run scripts/build.sh first)" >&2
  exit 1
}

# Debian's RocksDB, whatever TENURE_ROCKSDB the other builds use: its shared library (see
# CMakeLists.txt). Line tables only (-g1): a race report still names functions and lines. -O1:
# 29% less compile CPU than -O2, and the tests ran no slower (the step: 916 -> 725 s).
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENURE_TSAN=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DTENURE_ROCKSDB=system >/dev/null
targets=(unit_tests transport_tests peer_link_tests cli_tests client_tests tenured)
[[ "$cluster" == "1" ]] && targets+=(cluster_storage_tests)
ninja -C "$build_dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
# halt_on_error: a race in tenured ends it (exit 66), which the e2e test that started it sees.
# ignore_noninstrumented_modules: nothing inside the shared, uninstrumented RocksDB is tracked
# (see CMakeLists.txt), so its internal hand-overs are not taken for races.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 \
ignore_noninstrumented_modules=1 ${TSAN_OPTIONS:-}"
tenured=$(realpath "$build_dir/apps/tenured/tenured")
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j 2 \
  -R "^(unit\.|transport$|transport\.peer$|client_)"
# e2e_clock runs tenured under libfaketime's LD_PRELOAD, which is not for sanitized binaries; it
# tests the wall-clock rules, not concurrency.
if [[ -n "$groups" ]]; then
  TENURE_E2E_TENURED=$tenured ctest --test-dir "$drivers_dir" --output-on-failure --timeout 900 \
    -j 2 -R "^e2e_(${groups// /|})$" -E '^e2e_clock$'
fi
# Alone, as scripts/test.sh runs the label: six servers of their own, and failover timings that a
# parallel test would skew. Its nodes forward, fail over and watch across threads that the
# single-node tests never exercise together.
if [[ "$cluster" == "1" ]]; then
  ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -L cluster_storage
  TENURE_E2E_TENURED=$tenured ctest --test-dir "$drivers_dir" --output-on-failure --timeout 900 \
    -L cluster -LE cluster_storage
fi
