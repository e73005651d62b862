#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) in the ASan build (scripts/asan.sh: clang-16,
# build-asan/ or $ASAN_BUILD_DIR) and runs each for FUZZ_SECONDS (default 60) from its seed corpus
# and past crashes. New inputs go to build-asan/corpus/, never into the committed seeds; a crash
# leaves its input in build-asan/crashes/ and fails the script.
# Usage: scripts/fuzz.sh [target...]   (default: all; targets: request_parser codec front_door wal_tail)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${ASAN_BUILD_DIR:-build-asan}
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
((${#targets[@]})) || targets=(request_parser codec front_door wal_tail)

ASAN_BUILD_DIR=$build_dir scripts/asan.sh --configure
ninja -C "$build_dir" -j "${JOBS:-$(nproc)}" "${targets[@]/#/fuzz_}"

status=0
for target in "${targets[@]}"; do
  corpus=$build_dir/corpus/$target
  crashes=$build_dir/crashes/$target
  rm -rf "$crashes"
  mkdir -p "$corpus" "$crashes"
  seeds=(tests/fuzz/corpus/"$target")
  [[ -d tests/fuzz/regressions/$target ]] && seeds+=(tests/fuzz/regressions/"$target")
  echo "fuzz: $target for ${seconds}s"
  # -rss_limit_mb: the front door holds an engine with RocksDB; leaks are still reported.
  if ! "$build_dir/tests/fuzz/fuzz_$target" "$corpus" "${seeds[@]}" -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=4096 -max_len=16384 -print_final_stats=1 \
      -artifact_prefix="$crashes/" >"$build_dir/fuzz_$target.log" 2>&1; then
    echo "fuzz: $target FAILED; its input is in $crashes/, the log in $build_dir/fuzz_$target.log"
    tail -n 60 "$build_dir/fuzz_$target.log"
    status=1
  else
    grep -E '^stat::number_of_executed_units|^Done' "$build_dir/fuzz_$target.log" | tr '\n' ' '
    echo
  fi
done
exit $status
