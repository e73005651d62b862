#!/usr/bin/env bash
# Builds the unit tests, tenured and the end-to-end tests with ThreadSanitizer into build-tsan/
# (or $TSAN_BUILD_DIR) and runs the unit tests and every e2e group (or those in $TSAN_E2E, e.g.
# "ops watch"), each against a TSan-built tenured; then, alone, the cluster tests (label
# `cluster`: 3 etcd members and 3 TSan-built nodes; TSAN_CLUSTER=0 skips them). The first race
# reported stops the process that found it, so the test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TSAN_BUILD_DIR:-build-tsan}
groups=${TSAN_E2E:-[a-z_]+}

# Debian's RocksDB, whatever TENURE_ROCKSDB the other builds use: its shared library (see
# CMakeLists.txt).
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENURE_TSAN=ON \
  -DTENURE_ROCKSDB=system >/dev/null
cluster=${TSAN_CLUSTER:-1}
targets=(unit_binaries tenure_e2e)
[[ "$cluster" == "1" ]] && targets+=(cluster_storage_tests cluster_node_tests tenure_cluster)
ninja -C "$build_dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
# halt_on_error: a race in tenured ends it (exit 66), which the e2e test that started it sees.
# ignore_noninstrumented_modules: nothing inside the shared, uninstrumented RocksDB is tracked
# (see CMakeLists.txt), so its internal hand-overs are not taken for races.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 \
ignore_noninstrumented_modules=1 ${TSAN_OPTIONS:-}"
regex="^(unit\.|transport$|transport\.peer$)"
[[ -n "$groups" ]] && regex="$regex|^e2e_(${groups// /|})$"
# e2e_clock runs tenured under libfaketime's LD_PRELOAD, which is not for sanitized binaries; it
# tests the wall-clock rules, not concurrency.
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j 2 -R "$regex" -E '^e2e_clock$'
# Alone, as scripts/test.sh runs the label: six servers of their own, and failover timings that a
# parallel test would skew. Its nodes forward, fail over and watch across threads that the
# single-node tests never exercise together.
if [[ "$cluster" == "1" ]]; then
  ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -L cluster
fi
