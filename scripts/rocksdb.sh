#!/usr/bin/env bash
# Builds RocksDB as a static Release library from Debian's own source package of the version
# Debian ships (the one librocksdb-dev has), once, into a cache directory keyed by that version,
# and prints the install prefix. Debian's librocksdb is built without NDEBUG (assertions and sync
# points live) and with the portable, table-driven CRC32C; this one is -O3 -DNDEBUG with the
# SSE4.2/PCLMUL CRC32C. The first run takes ~8 minutes on 2 idle cores; later runs print the
# cached prefix at once.
#
#   cmake -S . -B build -DTENURE_ROCKSDB="$(scripts/rocksdb.sh)"
#
# Environment: TENURE_CACHE (default /var/cache/tenure), JOBS (default nproc).
set -euo pipefail

# Bump when the recipe below changes, so that a cached build of an older recipe is not reused.
recipe=1
version=$(dpkg-query -W -f='${Version}' librocksdb-dev)
cache=${TENURE_CACHE:-/var/cache/tenure}
prefix=$cache/rocksdb-$version-r$recipe
log() { echo "rocksdb.sh: $*" >&2; }

if [[ -f $prefix/.complete ]]; then
  echo "$prefix"
  exit 0
fi

sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
if ! mkdir -p "$cache" 2>/dev/null || [[ ! -w $cache ]]; then
  "${sudo_cmd[@]}" mkdir -p "$cache"
  "${sudo_cmd[@]}" chown "$(id -u):$(id -g)" "$cache"
fi

# One build at a time per cache (CI and a developer, or two worktrees).
exec 9>"$cache/.rocksdb.lock"
flock 9
if [[ -f $prefix/.complete ]]; then
  echo "$prefix"
  exit 0
fi

# The compression libraries Debian's librocksdb links (a ledger written by either build opens
# with the other), and dpkg-dev for dpkg-source.
packages=(dpkg-dev libsnappy-dev liblz4-dev libzstd-dev zlib1g-dev libbz2-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi

work=$(mktemp -d /tmp/tenure-rocksdb.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$SECONDS

# deb-src entries for the very archives apt has librocksdb-dev's version from, in a private apt
# state directory: the machine's apt configuration stays as it is.
apt-cache madison librocksdb-dev |
  awk -F' *[|] *' -v v="$version" '$2 == v && $3 ~ / Packages$/ {
    split($3, a, " "); n = split(a[2], s, "/")
    print "deb-src", a[1], s[1], (n > 1 ? s[2] : "")
  }' | sort -u >"$work/sources.list"
[[ -s $work/sources.list ]] || { log "no apt source has librocksdb-dev $version"; exit 1; }
mkdir -p "$work/lists/partial"
apt_opts=(-qq -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
          -o Dir::State::Lists="$work/lists" -o APT::Sandbox::User=root)
log "fetching Debian's source of rocksdb $version"
apt-get "${apt_opts[@]}" update
# apt checks the files against the signed index; dpkg-source then applies Debian's patches.
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only "rocksdb=$version" >/dev/null)
dpkg-source --no-check -x "$work"/rocksdb_*.dsc "$work/src" >/dev/null

# PORTABLE=ON + FORCE_SSE42: SSE4.2 and PCLMUL (every x86-64 server CPU since 2010, x86-64-v2)
# give the hardware CRC32C, and nothing newer is assumed: -march=native would let the compiler
# use this machine's AVX-512 and the cached library could die of SIGILL on another machine.
# RTTI stays on as in Debian's build (RocksDB's Release default drops it).
arch_opts=()
[[ $(uname -m) == x86_64 ]] && arch_opts=(-DFORCE_SSE42=ON)
log "building (about 8 minutes on 2 idle cores)"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DPORTABLE=ON "${arch_opts[@]}" -DUSE_RTTI=ON \
  -DROCKSDB_BUILD_SHARED=OFF -DWITH_TESTS=OFF -DWITH_TOOLS=OFF -DWITH_CORE_TOOLS=OFF \
  -DWITH_BENCHMARK_TOOLS=OFF -DWITH_GFLAGS=OFF -DFAIL_ON_WARNINGS=OFF \
  -DWITH_SNAPPY=ON -DWITH_LZ4=ON -DWITH_ZSTD=ON -DWITH_ZLIB=ON -DWITH_BZ2=ON >/dev/null
ninja -C "$work/build" -j "${JOBS:-$(nproc)}" rocksdb >/dev/null
rm -rf "$prefix"
cmake --install "$work/build" >/dev/null
touch "$prefix/.complete"
log "built in $((SECONDS - start)) s: $prefix"
echo "$prefix"
