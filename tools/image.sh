#!/usr/bin/env bash
# make image: the gpucast container image (integrations/kubernetes/Dockerfile)
# from the package `make deb` wrote, with nothing from the network but
# Debian's mirrors: the base is a Debian 12 root made with debootstrap
# (--variant=minbase), imported as gpucast-base:bookworm, then the Dockerfile
# installs the package on it.
#
# Usage: tools/image.sh BUILD_DIR [TAG]        (root; debootstrap; docker or podman)
#   --rootfs-check BUILD_DIR: without a container engine, install the package into
#   the debootstrap root (chroot) and run gpucast there: what the image would hold.
# Environment: MIRROR (default http://deb.debian.org/debian), IMAGE_BASE (a base image
# to use instead of debootstrap's, e.g. debian:12-slim from a registry).
set -euo pipefail
check=0
if [ "${1:-}" = --rootfs-check ]; then check=1; shift; fi
BUILD=$(realpath "${1:?usage: tools/image.sh [--rootfs-check] BUILD_DIR [TAG]}")
TAG=${2:-gpucast:$(sed -n 's/^project(gpucast VERSION \([0-9.]*\).*/\1/p' "$(dirname "$0")/../CMakeLists.txt")}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
DEB=$(ls -t "$BUILD"/gpucast_*.deb 2>/dev/null | head -1 || true)
[ -n "$DEB" ] || { echo "image: no $BUILD/gpucast_*.deb (make deb first)" >&2; exit 1; }

engine=""
for e in docker podman; do
  if command -v "$e" >/dev/null && "$e" info >/dev/null 2>&1; then engine=$e; break; fi
done

rootfs() {  # a Debian 12 minbase root in $BUILD/image/rootfs
  local r="$BUILD/image/rootfs"
  if [ ! -x "$r/usr/bin/apt-get" ]; then
    command -v debootstrap >/dev/null || { echo "image: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
    rm -rf "$r" && mkdir -p "$r"
    debootstrap --variant=minbase bookworm "$r" "$MIRROR" >&2
  fi
  echo "$r"
}

if [ $check = 1 ]; then
  R=$(rootfs)
  cp "$DEB" "$R/tmp/gpucast.deb"
  mount -t proc proc "$R/proc"
  trap 'umount "$R/proc" 2>/dev/null || true' EXIT
  chroot "$R" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/gpucast.deb >/dev/null && rm -rf /var/lib/apt/lists/*' >&2
  chroot "$R" /usr/bin/gpucast serve --help >/dev/null
  chroot "$R" /usr/bin/gpucast gpus >/dev/null
  umount "$R/proc"
  echo "image: the package installs on Debian 12 minbase ($(du -sh "$R" 2>/dev/null | cut -f1) root) and gpucast runs there"
  exit 0
fi

if [ -z "$engine" ]; then
  echo "image: no container engine can run here (docker info / podman info fail: $(docker info 2>&1 | tail -1 || true));" \
       "build the image on a machine with one: make image, or docker build -f integrations/kubernetes/Dockerfile -t $TAG $BUILD" >&2
  exit 3
fi
base=${IMAGE_BASE:-}
if [ -z "$base" ]; then
  R=$(rootfs)
  tar -C "$R" -c . | "$engine" import - gpucast-base:bookworm >/dev/null
  base=gpucast-base:bookworm
fi
printf '*\n!gpucast_*.deb\n' >"$BUILD/.dockerignore"  # the context is the package alone
"$engine" build --build-arg "BASE=$base" -f "$ROOT/integrations/kubernetes/Dockerfile" -t "$TAG" "$BUILD"
echo "image: $TAG (on $base); kind: kind load docker-image $TAG"
