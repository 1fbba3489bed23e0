#!/usr/bin/env bash
# The paper comparison of docs/simulator.md: every trace over a sweep of cluster
# sizes (load factors), every policy, then one markdown table of gains.
# Usage: tools/sweep.sh PATH/TO/gpucast OUT_DIR
set -euo pipefail
B=$(realpath "${1:?usage: sweep.sh PATH/TO/gpucast OUT_DIR}")
OUT=${2:?usage: sweep.sh PATH/TO/gpucast OUT_DIR}
mkdir -p "$OUT"
for n in 128 256 512 1024; do "$B" simulate --trace philly --policy all --cluster "${n}x RTX3090" --out "$OUT/philly-$n" >/dev/null; done
for e in 100 200 400; do "$B" simulate --trace alibaba2023 --policy all --cluster "alibaba-nodes:every=$e" --out "$OUT/alibaba-$e" >/dev/null; done
for n in 16 32 64; do "$B" simulate --trace gavel --policy all --cluster "${n}x RTX3090" --out "$OUT/gavel-$n" >/dev/null; done
/usr/bin/python3 - "$OUT" <<'PY'
import glob, json, os, sys
rows = []
for path in glob.glob(os.path.join(sys.argv[1], "*", "runs.json")):
    d = json.load(open(path))
    r = {x["policy"]: x for x in d["runs"]}
    rows.append((d["trace"], d["num_gpus"], d, r))
def gain(a, b, key):
    return "%+.1f%%" % (100.0 * (a[key] / b[key] - 1.0))
print("| trace | GPUs | util gain pred/slot | util gain pred/prof | work-util gain pred/slot | "
      "work-util gain pred/prof | JCT change pred/slot | JCT change pred/prof | util gain IA/slot | "
      "JCT change IA/slot | prediction MAE (points) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for trace, gpus, d, r in sorted(rows, key=lambda t: (t[0], t[1])):
    p, s, f, ia = r["predictive"], r["slot"], r["profiling"], r["interference-aware"]
    print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %.1f |" % (
        trace, gpus, gain(p, s, "cluster_utilization"), gain(p, f, "cluster_utilization"),
        gain(p, s, "work_utilization"), gain(p, f, "work_utilization"),
        gain(p, s, "jct_mean_s"), gain(p, f, "jct_mean_s"),
        gain(ia, s, "cluster_utilization"), gain(ia, s, "jct_mean_s"), p["prediction_mae"]))
# Per policy, on each trace's default cluster.
for trace, gpus, d, r in sorted(rows, key=lambda t: (t[0], t[1])):
    if (trace, gpus) not in (("philly", 256), ("alibaba2023", 26)):
        continue
    print("\n**%s, %s (%d GPUs)**\n" % (trace, d["cluster"], gpus))
    print("| policy | util % | work util % | JCT mean (h) | JCT p95 (h) | queue mean (h) | makespan (d) "
          "| run slowdown | profiling GPU-h |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for x in d["runs"]:
        print("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f | %.0f |" % (
            x["policy"], x["cluster_utilization"], x["work_utilization"], x["jct_mean_s"] / 3600,
            x["jct_p95_s"] / 3600, x["queue_mean_s"] / 3600, x["makespan_s"] / 86400,
            x["mean_run_slowdown"], x["profiling_gpu_s"] / 3600))
PY
