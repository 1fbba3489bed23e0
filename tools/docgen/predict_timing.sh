#!/usr/bin/env bash
# docs/performance.md's predictor table: wall and CPU time of `gpucast predict` (resnet50 b32,
# weight-free graph, a predictor file trained here), `gpucast --version` and `gpucast train` on the
# shared measurements, each as a whole process; medians of RUNS (predict, --version) and of 3
# (train). Prints a markdown table and the machine's load. A timing, not a test.
# Usage: tools/docgen/predict_timing.sh BUILD/gpucast [RUNS]   (default 10)
set -euo pipefail
BIN=$(realpath "${1:?usage: predict_timing.sh BUILD/gpucast [RUNS]}")
RUNS=${2:-10}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/gpucast-timing.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$ROOT"
load0=$(cut -d' ' -f1 /proc/loadavg)
# times N CMD...: N runs; prints "median_wall_ms median_cpu_ms"
times() {
  local n=$1; shift
  for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %U %S" -o "$T/t" "$@" >/dev/null 2>&1
    awk '{ printf "%.1f %.1f\n", $1 * 1000, ($2 + $3) * 1000 }' "$T/t" >>"$T/all"
  done
  local w c
  w=$(cut -d' ' -f1 "$T/all" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
  c=$(cut -d' ' -f2 "$T/all" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }')
  rm -f "$T/all"
  echo "$w $c"
}
fmt() { awk -v w="$1" -v c="$2" 'BEGIN { if (w >= 1000) printf "%.2f s | %.2f s", w / 1000, c / 1000; else printf "%.1f ms | %.1f ms", w, c }'; }
"$BIN" train --quiet --out "$T/p.json" >/dev/null 2>&1
read -r pw pc < <(times "$RUNS" "$BIN" predict --predictor "$T/p.json" --model models/resnet50.onnx --batch 32 --json)
read -r vw vc < <(times "$RUNS" "$BIN" --version)
read -r tw tc < <(times 3 "$BIN" train --quiet --out "$T/q.json")
echo "| process | median wall | median CPU (user + system) |"
echo "|---|---|---|"
echo "| \`gpucast predict\` resnet50, weight-free graph, b32 ($RUNS runs) | $(fmt "$pw" "$pc") |"
echo "| \`gpucast --version\` ($RUNS runs) | $(fmt "$vw" "$vc") |"
echo "| \`gpucast train\` on the shared measurements (3 runs) | $(fmt "$tw" "$tc") |"
echo
echo "Load average $load0 before, $(cut -d' ' -f1 /proc/loadavg) after, on $(nproc) CPUs."
