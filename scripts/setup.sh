#!/usr/bin/env bash
# Installs the Debian 12 packages Tenure needs to build, test and benchmark, if missing.
# Usage: scripts/setup.sh [--test]   (--test adds what the test suite uses)
set -euo pipefail

packages=(build-essential cmake ninja-build ccache pkg-config
          libboost1.81-dev librocksdb-dev libsimdjson-dev libspdlog-dev libcli11-dev catch2
          libjemalloc-dev  # tenured's allocator (docs/benchmarks.md)
          libsystemd-dev   # sd_notify and socket activation
          help2man)        # the man pages tenure(1) and tenured(8), made at build time
# cpack -G DEB: dpkg-shlibdeps (dpkg-dev) finds the dependencies, `file` tells it the binaries.
packages+=(dpkg-dev file)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(python3 procps faketime python3-pytest)
  # The Python package's wheel test: pip with the setuptools backend, offline.
  packages+=(python3-pip python3-setuptools python3-wheel)
  # The dashboard's browser test (tests/browser): headless Chromium and a font to render with.
  packages+=(chromium fonts-dejavu-core)
  # The ASan build and fuzzing (scripts/asan.sh, scripts/fuzz.sh); systemd-socket-activate and
  # systemd-analyze (tests/e2e, packaging).
  # (libclang-rt-16-dev: the sanitizer and libFuzzer runtimes clang links.)
  packages+=(clang-16 libclang-rt-16-dev libfuzzer-16-dev systemd)
  # The cluster tests (tests/cluster) run a three-member etcd.
  packages+=(etcd-server)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi
