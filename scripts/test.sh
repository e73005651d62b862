#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test, one step after another; each step
# prints its time. Steps: the release build and its tests; the cluster tests (3 etcd members and 3
# tenured nodes, label `cluster`, CLUSTER=0 skips); the ASan+UBSan build of the unit tests
# (SANITIZE=0 skips it); ThreadSanitizer (TSAN=0 skips); fuzzing (FUZZ=0 skips, FUZZ_SECONDS per
# target, 30 here: four targets in two minutes, to keep CI within 45 minutes); the Debian package
# (only as root with TENURE_PACKAGE_TEST=1, as in CI).
# To add a step: one `step NAME COMMAND...` line.
set -euo pipefail
cd "$(dirname "$0")/.."

step() {
  local name=$1 start=$SECONDS
  shift
  echo "=== $name"
  "$@"
  echo "=== $name: $((SECONDS - start)) s"
}

step setup scripts/setup.sh --test
step build env BUILD_DIR=build scripts/build.sh
step tests ctest --test-dir build --output-on-failure --timeout 600 -j 2 -LE cluster
# Alone: six servers of their own, and failover timings that a parallel test would skew.
[[ "${CLUSTER:-1}" == "1" ]] && step cluster ctest --test-dir build --output-on-failure -L cluster
[[ "${SANITIZE:-1}" == "1" ]] && step asan scripts/asan.sh
[[ "${TSAN:-1}" == "1" ]] && step tsan scripts/tsan.sh
[[ "${FUZZ:-1}" == "1" ]] && step fuzz env FUZZ_SECONDS="${FUZZ_SECONDS:-30}" scripts/fuzz.sh
step package tests/packaging/deb_test.sh build
echo "=== all passed in $SECONDS s"
