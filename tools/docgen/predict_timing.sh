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
# times N CMD...: N runs; prints "median_wall_ms median_cpu_ms" (CPU: the child's user + system
# time from getrusage, microsecond resolution)
times() {
  /usr/bin/python3 - "$@" <<'PY'
import resource, statistics, subprocess, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
walls, cpus = [], []
for _ in range(n):
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    walls.append((t1 - t0) * 1000)
    cpus.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
print(f"{statistics.median(walls):.1f} {statistics.median(cpus):.1f}")
PY
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
