#!/usr/bin/env bash
# Configures and builds Tenure into build/ (or $BUILD_DIR). Extra args go to cmake.
# RocksDB: a Release build of Debian's source package (scripts/rocksdb.sh: ~8 minutes on 2 idle
# cores the first time, then cached); TENURE_ROCKSDB=system links Debian's librocksdb instead.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} \
  -DTENURE_ROCKSDB="${TENURE_ROCKSDB:-source}" "$@" >/dev/null
ninja -C "$build_dir" -j "${JOBS:-$(nproc)}"
