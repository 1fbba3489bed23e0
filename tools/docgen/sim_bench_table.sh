#!/usr/bin/env bash
# docs/performance.md's simulator table: the full Philly trace under every policy on the default
# Philly cluster (what bench/sim_bench.sh runs), as markdown: per policy the simulation's wall
# time, its events and events/s, and the whole command's time; the machine's load before and after.
# A timing: wall times depend on the machine and its load, the event counts do not.
# Usage: tools/docgen/sim_bench_table.sh BUILD/gpucast
set -euo pipefail
BIN=$(realpath "${1:?usage: sim_bench_table.sh BUILD/gpucast}")
OUT=$(mktemp -d /tmp/gpucast-simbench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
load0=$(cut -d' ' -f1 /proc/loadavg)
start=$(date +%s.%N)
"$BIN" simulate --quiet --trace philly --policy all --out "$OUT/runs" --json >"$OUT/runs.json"
end=$(date +%s.%N)
/usr/bin/python3 - "$OUT/runs.json" "$start" "$end" "$load0" "$(cut -d' ' -f1 /proc/loadavg)" "$(nproc)" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
total = float(sys.argv[3]) - float(sys.argv[2])
print(f"{m['jobs']:,} jobs of the {m['trace']} trace on {m['num_gpus']} GPUs ({m['cluster']}).")
print()
print("| policy | wall s | events | events/s |")
print("|---|---|---|---|")
sim = 0.0
for r in m["runs"]:
    sim += r["wall_s"]
    mig = f" ({r['migrations']:,} migrations)" if r.get("migrations") else ""
    print(f"| {r['policy']} | {r['wall_s']:.2f} | {r['events']:,} | {r['events'] / r['wall_s']:,.0f}{mig} |")
print()
print(f"All policies: {sim:.1f} s of simulation, {total:.1f} s for the whole command (trace loading, "
      f"predictions, writing outputs); load average {sys.argv[4]} before, {sys.argv[5]} after, on {sys.argv[6]} CPUs.")
PY
