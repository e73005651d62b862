#!/usr/bin/env bash
# ASan+UBSan. Builds build-asan/ (or $ASAN_BUILD_DIR) with clang-16, ASan, UBSan and libFuzzer's
# coverage: the one build that scripts/fuzz.sh runs its targets from too, so that the libraries
# compile once for both. -O1 as libFuzzer's guide builds, assertions on, line tables only. Then
# runs the unit-labelled tests there (the fuzz replays included); the end-to-end ones already ran
# in the release build. `scripts/asan.sh --configure` only configures.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ASAN_BUILD_DIR:-build-asan}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_CXX_COMPILER="${ASAN_CXX:-clang++-16}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DTENURE_SANITIZE=ON -DTENURE_FUZZ=ON >/dev/null
[[ ${1:-} == --configure ]] && exit 0
ninja -C "$build_dir" -j "${JOBS:-$(nproc)}" unit_binaries
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -L unit -j 2
