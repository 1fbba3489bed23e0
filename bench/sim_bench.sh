#!/usr/bin/env bash
# Simulator benchmark: the full Philly trace (82,247 jobs) under every policy
# (predictive-feedback included) on the default Philly cluster, 256 GPUs.
# Prints per-policy wall time and events/s, and the total; exits non-zero when
# the command total exceeds the target (30 s on 2 cores; SIM_BENCH_TARGET_S).
# Usage: bench/sim_bench.sh [path/to/gpucast] [extra simulate flags...]
set -euo pipefail
BIN=${1:-build/gpucast}
shift || true
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
start=$(date +%s.%N)
"$BIN" simulate --trace philly --policy all --out "$OUT" --json "$@" > "$OUT/runs.stdout.json"
end=$(date +%s.%N)
/usr/bin/python3 - "$OUT/runs.stdout.json" "$start" "$end" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
total = float(sys.argv[3]) - float(sys.argv[2])
print(f"trace {m['trace']}: {m['jobs']} jobs on {m['num_gpus']} GPUs ({m['cluster']})")
print(f"{'policy':<20}{'wall_s':>8}{'events':>10}{'events/s':>12}{'migrations':>12}")
sim = 0.0
for r in m["runs"]:
    sim += r["wall_s"]
    print(f"{r['policy']:<20}{r['wall_s']:>8.2f}{r['events']:>10}{r['events'] / r['wall_s']:>12.0f}{r['migrations']:>12}")
print(f"simulation total {sim:.2f} s; command total (load trace, predictions, write outputs) {total:.2f} s")
target = float(__import__("os").environ.get("SIM_BENCH_TARGET_S", "30"))
print(f"target {target:.0f} s: {'met' if total <= target else 'MISSED'}")
sys.exit(0 if total <= target else 1)
PY
