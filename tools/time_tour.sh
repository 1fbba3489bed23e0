#!/usr/bin/env bash
# Runs sections 1-3 of the README's "A short tour" as written (the commands after
# "B=build/gpucast" up to section 4, the service, which runs until stopped) in a scratch
# copy of the checkout's layout, and prints each command's wall and CPU time and the total.
# Usage: tools/time_tour.sh [BUILD_DIR]   (default build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath "${1:-$ROOT/build}")
T=$(mktemp -d /tmp/gpucast-tour.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/repo"
for d in models examples tools clients; do ln -s "$ROOT/$d" "$T/repo/$d"; done
ln -s "$BUILD" "$T/repo/build"
ln -s "$(realpath "${GPUCAST_DATA:-$ROOT/../shared/data}/..")" "$T/shared"
awk '/^## A short tour/ { on = 1 } on && /^# 4\./ { exit } on && /^\$B |^tools\// { print }' "$ROOT/README.md" >"$T/tour.sh"
[ -s "$T/tour.sh" ] || { echo "time_tour: no tour commands found in README.md" >&2; exit 1; }
cd "$T/repo"
export B=build/gpucast PATH="/usr/bin:$PATH"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, commit $(git -C "$ROOT" rev-parse --short HEAD)"
total0=$(date +%s.%N)
while IFS= read -r cmd; do
  /usr/bin/time -f "%e %U %S" -o "$T/time" bash -c "$cmd" >/dev/null 2>"$T/err" ||
    { echo "time_tour: FAILED: $cmd"; tail -5 "$T/err"; exit 1; }
  read -r wall user sys <"$T/time"
  printf "%7.1f s wall %7.1f s CPU  %s\n" "$wall" "$(echo "$user + $sys" | bc)" "${cmd:0:100}"
  echo "$user + $sys" >>"$T/cpu"
done <"$T/tour.sh"
printf "total: %.1f s wall, %.1f s CPU\n" "$(echo "$(date +%s.%N) - $total0" | bc)" "$(paste -sd+ "$T/cpu" | bc)"
