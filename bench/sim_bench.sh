#!/usr/bin/env bash
# Simulator benchmark: thirteen policy runs of one seed on the whole Philly trace
# (82,247 jobs, arrivals of seed 1) on 256 RTX 3090s at load x2 (the operating
# point of docs/simulator.md): every policy of the table (ten) with the default
# predictions, and predictive, interference-aware and predictive-feedback with
# oracle predictions. Prints per-run wall and CPU time
# and events/s, and the totals; exits non-zero when the wall total exceeds the
# target (60 s; SIM_BENCH_TARGET_S).
# The leave-one-workload-out predictions are computed once per build and
# cached (docs/simulator.md, "Predictions"): a warm-up run fills the cache
# first, untimed, and its time is printed apart.
# Usage: bench/sim_bench.sh [path/to/gpucast] [extra simulate flags...]
set -euo pipefail
BIN=${1:-build/gpucast}
shift || true
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
COMMON=(--trace philly --cluster "256x RTX3090" --load-factor 2 --seed 1 --json "$@")
w0=$(date +%s.%N)
"$BIN" simulate --trace philly --jobs 10 --policy predictive --out "$OUT/warm" --json "$@" >/dev/null
w1=$(date +%s.%N)
start=$(date +%s.%N)
/usr/bin/time -f "%U %S" -o "$OUT/time1" "$BIN" simulate "${COMMON[@]}" --policy all --out "$OUT/a" > "$OUT/a.json"
/usr/bin/time -f "%U %S" -o "$OUT/time2" "$BIN" simulate "${COMMON[@]}" \
  --policy predictive,interference-aware,predictive-feedback --predictions oracle --out "$OUT/b" \
  > "$OUT/b.json"
end=$(date +%s.%N)
/usr/bin/python3 - "$OUT" "$start" "$end" "$w0" "$w1" <<'PY'
import json, os, sys
out, start, end, w0, w1 = sys.argv[1], *map(float, sys.argv[2:])
runs, cpu = [], 0.0
for name in ("a", "b"):
    m = json.load(open(os.path.join(out, name + ".json")))
    runs += m["runs"]
    cpu += sum(map(float, open(os.path.join(out, "time" + ("1" if name == "a" else "2"))).read().split()))
print(f"trace {m['trace']}: {m['jobs']} jobs on {m['num_gpus']} GPUs ({m['cluster']}), load x2, seed 1")
print(f"{'run':<30}{'wall_s':>8}{'events':>10}{'events/s':>12}{'migrations':>12}{'ooms':>6}")
sim = 0.0
for r in runs:
    sim += r["wall_s"]
    name = r["policy"] + (" (oracle)" if r["predictions"] == "oracle" else "")
    print(f"{name:<30}{r['wall_s']:>8.2f}{r['events']:>10}{r['events'] / r['wall_s']:>12.0f}{r['migrations']:>12}"
          f"{r['oom_events']:>6}")
total = end - start
print(f"{len(runs)} runs: simulation {sim:.2f} s; two commands (load trace, resample, predictions from the cache, "
      f"write outputs) {total:.2f} s wall, {cpu:.2f} s CPU; cache warm-up (untimed) {w1 - w0:.2f} s")
target = float(os.environ.get("SIM_BENCH_TARGET_S", "60"))
print(f"target {target:.0f} s wall: {'met' if total <= target else 'MISSED'}")
sys.exit(0 if total <= target else 1)
PY
