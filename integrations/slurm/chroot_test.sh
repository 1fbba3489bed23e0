#!/usr/bin/env bash
# The live Slurm test (test.sh) against Slurm 24.11: inside a Debian 13 (trixie) chroot, whose
# slurmctld/slurmd/munge are Debian 13's (24.11.x), with gpucast installed from this build.
# `make slurm-test-24.11` runs it. It is NOT part of `make test` (docs/slurm.md "The test"):
# building the chroot downloads about 150 MB and takes minutes; once built it is reused.
#
# Usage: integrations/slurm/chroot_test.sh [BUILD/gpucast]          (root)
#        integrations/slurm/chroot_test.sh --build-only            (make the chroot, run nothing)
# Settings (environment):
#   GPUCAST_CHROOT=DIR   the chroot (default /var/cache/gpucast/trixie-slurm), built once with
#                        debootstrap (apt-get install debootstrap) and reused while it exists
#   GPUCAST_DEBIAN_MIRROR=URL  (default: the first http mirror of this host's apt sources, else
#                        http://deb.debian.org/debian)
# The chroot shares the host's kernel, network namespace (loopback) and /dev; test.sh starts its
# daemons on free ports and removes what it made, as on the host.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD_ONLY=0
if [ "${1:-}" = --build-only ]; then BUILD_ONLY=1; shift; fi
BUILT=$(realpath -m "${1:-$ROOT/build/gpucast}")
BUILD_DIR=$(dirname "$BUILT")
DIR=${GPUCAST_CHROOT:-/var/cache/gpucast/trixie-slurm}
PKGS="slurmctld,slurmd,slurm-client,munge,curl,lua-socket,jq,sudo,lua5.1,procps,passwd,binutils,python3-minimal,hostname"

[ "$(id -u)" = 0 ] || { echo "slurm 24.11 test: FAILED: needs root (debootstrap, chroot, the test's daemons)" >&2; exit 1; }

mirror() {
  [ -n "${GPUCAST_DEBIAN_MIRROR:-}" ] && { echo "$GPUCAST_DEBIAN_MIRROR"; return; }
  local m
  m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
      grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ')
  echo "${m:-http://deb.debian.org/debian}"
}

if [ ! -x "$DIR/usr/sbin/slurmctld" ]; then
  command -v debootstrap >/dev/null || { echo "slurm 24.11 test: FAILED: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }
  M=$(mirror)
  echo "slurm 24.11 test: building the Debian 13 chroot in $DIR from $M (once; reused afterwards)"
  rm -rf "$DIR.tmp"
  mkdir -p "$(dirname "$DIR")"
  debootstrap --variant=minbase --include="$PKGS" trixie "$DIR.tmp" "$M" >"$(dirname "$DIR")/debootstrap.log" 2>&1 ||
    { echo "slurm 24.11 test: FAILED: debootstrap (log: $(dirname "$DIR")/debootstrap.log):" >&2;
      tail -5 "$(dirname "$DIR")/debootstrap.log" >&2; exit 1; }
  mv "$DIR.tmp" "$DIR"
fi
VERSION=$(chroot "$DIR" dpkg-query -W -f='${Version}' slurmctld)
echo "slurm 24.11 test: chroot $DIR, Debian $(cat "$DIR/etc/debian_version"), slurmctld $VERSION"
[ "$BUILD_ONLY" = 1 ] && exit 0

[ -x "$BUILT" ] || { echo "slurm 24.11 test: FAILED: no gpucast binary at $BUILT" >&2; exit 1; }
# gpucast, installed from this build into the chroot; the shared libraries the chroot lacks
# (a Debian 12 build) come from this host, in a directory of their own.
P=/opt/gpucast-test
rm -rf "$DIR$P" "$DIR/gpucast-src"
# A previous run's host libraries are gone with $P: forget them, so that the check below copies
# what this build needs again (else the chroot's ld cache still names them and nothing is copied).
rm -f "$DIR/etc/ld.so.conf.d/zz-gpucast-test.conf"
chroot "$DIR" /sbin/ldconfig
cmake --install "$BUILD_DIR" --prefix "$DIR$P" --strip >/dev/null
mkdir -p "$DIR$P/hostlib"
# XGBoost is opened at run time (dlopen of libxgboost.so.0, predict/xgb_api.cc), so ldd does not
# list it: it and its own libraries are copied the same way.
XGB=$(/sbin/ldconfig -p | awk '/libxgboost\.so\.0 / && !x { print $NF; x = 1 }')
for bin in "$DIR$P/bin/gpucast" "$DIR$P/lib/gpucast/gpucast-serve" ${XGB:+"$XGB"}; do
  [ -e "$bin" ] || continue
  { [ "$bin" = "$XGB" ] && echo "libxgboost.so.0 $XGB"; ldd "$bin" | awk '$3 ~ /^\// { print $1, $3 }'; } |
    while read -r so path; do
      chroot "$DIR" /sbin/ldconfig -p | grep -q "^[[:space:]]*$so " || cp -L "$path" "$DIR$P/hostlib/$so"
    done
done
echo "$P/hostlib" > "$DIR/etc/ld.so.conf.d/zz-gpucast-test.conf"
chroot "$DIR" /sbin/ldconfig
missing=$(chroot "$DIR" ldd "$P/bin/gpucast" | grep 'not found' || true)
[ -z "$missing" ] || { echo "slurm 24.11 test: FAILED: gpucast cannot run in the chroot: $missing" >&2; exit 1; }
# The test and what it reads from the checkout (integrations/slurm), at the same relative place.
mkdir -p "$DIR/gpucast-src/integrations"
cp -a "$HERE" "$DIR/gpucast-src/integrations/"

MOUNTS=()
cleanup() {
  local m
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
  rm -rf "$DIR/gpucast-src" "$DIR$P" "$DIR/etc/ld.so.conf.d/zz-gpucast-test.conf"
}
trap cleanup EXIT
for m in proc sys dev dev/pts; do
  mkdir -p "$DIR/$m"
  # A mount left by a run that was killed (the suite lock keeps two runs apart) goes first.
  mountpoint -q "$DIR/$m" && umount -l "$DIR/$m"
  case $m in
    proc) mount -t proc proc "$DIR/proc" ;;
    sys) mount -t sysfs sys "$DIR/sys" ;;
    dev) mount --bind /dev "$DIR/dev" ;;
    dev/pts) mount -t devpts devpts "$DIR/dev/pts" -o newinstance,ptmxmode=0666 2>/dev/null || mount --bind /dev/pts "$DIR/dev/pts" ;;
  esac
  MOUNTS+=("$DIR/$m")
done
mkdir -p "$DIR/run/munge" "$DIR/tmp"; chmod 1777 "$DIR/tmp"
# The host's names (the chroot shares its network namespace; debootstrap writes no /etc/hosts).
# Without them every lookup of the node's name goes to DNS: with 50 submissions in flight a
# plain sbatch then took 5.06 s on 24.11 (a resolver timeout), 4 ms with them.
cp /etc/hosts "$DIR/etc/hosts"
set +e
chroot "$DIR" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C HOME=/root \
  GPUCAST_PREFIX="$P" GPUCAST_SLURM_VERSION="$VERSION" \
  /bin/bash /gpucast-src/integrations/slurm/test.sh "$P/bin/gpucast"
rc=$?
set -e
if [ "$rc" = 0 ]; then echo "slurm 24.11 test: PASSED (slurmctld $VERSION, Debian 13 chroot)"
else echo "slurm 24.11 test: FAILED (slurmctld $VERSION, Debian 13 chroot)" >&2; fi
exit "$rc"
