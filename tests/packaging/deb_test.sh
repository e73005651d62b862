#!/usr/bin/env bash
# Builds the Debian package (cpack -G DEB in BUILD_DIR), installs it with apt-get, and checks the
# installed binaries: tenured --version, then an acquire by the installed CLI through a socket
# that starts the installed tenured, as the package's `tenure` user, on the first connection.
# It installs onto this machine, so it runs only as root with TENURE_PACKAGE_TEST=1 (.ci/run
# sets it); a package that was not installed before is removed again.
# Usage: deb_test.sh [BUILD_DIR]
set -euo pipefail
build_dir=$(realpath "${1:-build}")
if [[ $(id -u) -ne 0 || "${TENURE_PACKAGE_TEST:-0}" != 1 ]]; then
  echo "deb_test: skipped (installs a package: needs root and TENURE_PACKAGE_TEST=1)"
  exit 0
fi

rm -f "$build_dir"/tenure_*.deb
(cd "$build_dir" && cpack -G DEB >/dev/null)
debs=("$build_dir"/tenure_*_amd64.deb)
deb=${debs[0]}
echo "deb_test: $(basename "$deb"), depends: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -f "$deb" Depends | grep -q libsimdjson || { echo "no shared-library dependencies"; exit 1; }

preinstalled=0
dpkg-query -W -f='${Status}' tenure 2>/dev/null | grep -q 'install ok installed' && preinstalled=1
dir=$(mktemp -d)
activator=
cleanup() {
  [[ -n $activator ]] && kill "$activator" 2>/dev/null && wait "$activator" 2>/dev/null || true
  rm -rf "$dir"
  if ((!preinstalled)); then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq tenure >/dev/null || true
  fi
}
trap cleanup EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >/dev/null

# The cli engineer's --version; --help until then.
/usr/sbin/tenured --version || /usr/sbin/tenured --help >/dev/null
getent passwd tenure >/dev/null && getent group tenure >/dev/null
grep -q '^ExecStart=/usr/sbin/tenured ' /usr/lib/systemd/system/tenured.service
test -f /usr/lib/systemd/system/tenured.socket

chmod 755 "$dir"
install -d -o tenure -g tenure -m 700 "$dir/data"
# setpriv execs in place, so tenured keeps the pid the sockets were passed to.
systemd-socket-activate -l "$dir/tenured.sock" \
  setpriv --reuid tenure --regid tenure --init-groups \
  /usr/sbin/tenured --data-dir "$dir/data" --ws-listen off >"$dir/log" 2>&1 &
activator=$!
for _ in $(seq 100); do [[ -S $dir/tenured.sock ]] && break; sleep 0.1; done
test ! -e "$dir/data/ledger"  # not started yet
# The socket file appears at bind, a moment before it listens; the same owner's acquire repeats.
acquired=0
for _ in $(seq 20); do
  if out=$(TENURE_SOCKET=$dir/tenured.sock tenure acquire pkg/check --owner ci --ttl 30s 2>&1); then
    acquired=1
    break
  fi
  sleep 0.2
done
((acquired)) || { echo "acquire failed: $out"; cat "$dir/log"; exit 1; }
echo "deb_test: $out"
test -d "$dir/data/ledger"
grep -q "from the service manager" "$dir/log" || { cat "$dir/log"; exit 1; }
echo "deb_test: passed"
