#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the release build, then the ASan+UBSan
# build of the unit tests (SANITIZE=0 skips the latter).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
BUILD_DIR=build scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 600 -j 2
if [[ "${SANITIZE:-1}" == "1" ]]; then
  # Only the in-process tests run under the sanitizers; the end-to-end ones already ran above.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTENURE_SANITIZE=ON >/dev/null
  ninja -C build-asan -j "${JOBS:-$(nproc)}" unit_tests transport_tests
  ctest --test-dir build-asan --output-on-failure --timeout 900 -L unit -j 2
fi
