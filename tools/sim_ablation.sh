#!/usr/bin/env bash
# Where predictive loses its useful work with the shipped predictions (docs/simulator.md, Results,
# "Default predictions against constant:50"): utilization and memory predictions swapped between the
# model (leave one workload out, what `simulate` uses by default), the truth (Lucid's measured
# gpu_util and gmem) and a constant 50, for `predictive` on Philly x2, 256 RTX 3090s, seeds 1-3:
#   util model  + mem model    the default                    util true + mem true    --predictions oracle
#   util 50     + mem model    --predictions constant:50     util model + mem true    a CSV (below)
#   util true   + mem model    a CSV                          util 50    + mem true    a CSV
# The CSVs take the model's per-workload predicted utilization and packed memory (its interval's
# high end) from the default run's jobs.csv (columns predicted_util, sched_mem_mib) and the truth from
# ../shared/data/lucid/single_data.csv. One `gpucast simulate` command per row (--seeds 1-3), skipped
# when OUT_DIR already holds its runs; then one line per row (mean and per-seed mean JCT, useful work).
# Usage: tools/sim_ablation.sh PATH/TO/gpucast OUT_DIR
set -euo pipefail
B=$(realpath "${1:?usage: sim_ablation.sh PATH/TO/gpucast OUT_DIR}")
OUT=${2:?usage: sim_ablation.sh PATH/TO/gpucast OUT_DIR}
DATA=${GPUCAST_DATA:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
P=(--trace philly --cluster "256x RTX3090" --load-factor 2 --seeds 1-3 --quiet --policy predictive)
run() {  # run DIR ARGS...
  local dir=$1; shift
  if [ -z "$(find "$OUT/$dir" -name summary.json 2>/dev/null | head -1)" ]; then
    echo "+ gpucast simulate ${P[*]} $* --out $OUT/$dir" >&2
    "$B" simulate "${P[@]}" "$@" --out "$OUT/$dir" >/dev/null
  fi
}
run default
run constant-50 --predictions constant:50
run oracle --predictions oracle
/usr/bin/python3 - "$OUT" "$DATA/lucid/single_data.csv" <<'PY'
import csv, sys
out, single = sys.argv[1], sys.argv[2]
model = {}
for r in csv.DictReader(open(f"{out}/default/seed-1/jobs.csv")):
    model.setdefault(r["workload"], (float(r["predicted_util"]), float(r["sched_mem_mib"])))
truth = {}
for r in csv.DictReader(open(single)):
    truth[f"{r['model']}/{r['dataset']}/b{r['batchsize']}/amp{r['amp']}"] = (r, float(r["gpu_util"]), float(r["gmem"]))
missing = sorted(set(truth) - set(model))
if missing:
    sys.exit(f"sim_ablation.sh: the default run has no job of workload(s) {missing}")
for name, util, mem in [("trueutil-modelmem", 1, "model"), ("modelutil-truemem", 0, "true"),
                        ("const50-truemem", None, "true")]:
    with open(f"{out}/{name}.csv", "w") as f:
        f.write("model,dataset,batchsize,amp,predicted_util,pred_mem_mib,pred_mem_high_mib\n")
        for k, (r, tu, tm) in sorted(truth.items()):
            u = 50.0 if util is None else (tu if util else model[k][0])
            m = model[k][1] if mem == "model" else tm
            f.write(f"{r['model']},{r['dataset']},{r['batchsize']},{r['amp']},{u},{m},{m}\n")
PY
for a in trueutil-modelmem modelutil-truemem const50-truemem; do run "$a" --predictions "$OUT/$a.csv"; done
exec /usr/bin/python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = [("util model + mem model (default)", "default"), ("util 50 + mem model (constant:50)", "constant-50"),
        ("util true + mem true (oracle)", "oracle"), ("util true + mem model", "trueutil-modelmem"),
        ("util model + mem true", "modelutil-truemem"), ("util 50 + mem true", "const50-truemem")]
print("| predictions | mean JCT (h) | per seed | useful work % | per seed |")
print("|---|---:|---|---:|---|")
for label, d in rows:
    v = [json.load(open(f"{out}/{d}/seed-{s}/summary.json")) for s in (1, 2, 3)]
    j = [x["jct_mean_s"] / 3600 for x in v]
    u = [x["useful_work_utilization"] for x in v]
    print(f"| {label} | {sum(j) / 3:.1f} | {', '.join(f'{x:.1f}' for x in j)} | {sum(u) / 3:.2f} | "
          f"{', '.join(f'{x:.2f}' for x in u)} |")
PY
