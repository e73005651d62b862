#!/usr/bin/env bash
# Builds the unit tests, tenured and the end-to-end tests with ThreadSanitizer into build-tsan/
# (or $TSAN_BUILD_DIR) and runs the unit tests and the e2e groups in $TSAN_E2E, each against a
# TSan-built tenured. The first race reported stops the process that found it, so the test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TSAN_BUILD_DIR:-build-tsan}
groups=${TSAN_E2E:-ops protocol coordination watch websocket daemon}

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENURE_TSAN=ON >/dev/null
ninja -C "$build_dir" -j "${JOBS:-$(nproc)}" unit_tests transport_tests tenure_e2e
# halt_on_error: a race in tenured ends it (exit 66), which the e2e test that started it sees.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
regex="^(unit\.|transport$)"
[[ -n "$groups" ]] && regex="$regex|^e2e_(${groups// /|})$"
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j 2 -R "$regex"
