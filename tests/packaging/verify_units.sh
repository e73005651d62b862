#!/usr/bin/env bash
# systemd-analyze verify on the units of packaging/systemd, with ExecStart pointing at the
# tenured under test (the installed path does not exist here).
# Usage: verify_units.sh SOURCE_DIR TENURED
set -euo pipefail
source_dir=$1
tenured=$2
if ! command -v systemd-analyze >/dev/null; then
  echo "systemd-analyze is not installed (Debian package systemd); skipped"
  exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s|@TENURED_PATH@|$tenured|" "$source_dir/packaging/systemd/tenured.service.in" \
  >"$dir/tenured.service"
cp "$source_dir/packaging/systemd/tenured.socket" "$dir/"
# --man=no: the man pages are not installed where the tests run.
out=$(systemd-analyze verify --man=no "$dir/tenured.socket" "$dir/tenured.service" 2>&1) || {
  echo "$out"
  exit 1
}
# verify exits 0 on some warnings: none is expected.
if [[ -n "$out" ]]; then
  echo "$out"
  exit 1
fi
echo "units verified"
