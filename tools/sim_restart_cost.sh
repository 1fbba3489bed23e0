#!/usr/bin/env bash
# The restart cost of profiling-exclusive (issue 34's `--restart-s 60` check)
# measured against the scheduling's run-to-run noise.
#
# One run per seed and restart cost cannot resolve a cost of ~0.1 points: the
# restarts move every later decision (a job ending 60 s later changes which
# jobs fit where next), and that alone moves a seed's useful work by ~0.1-0.2
# points (sd) either way. This runs profiling-exclusive at load 2 on Philly /
# 256 RTX 3090s for each seed over a grid of restart costs (near 0, near 60 s,
# and 10-300 s; every run a different realization of that noise) and prints
# per seed: the spread of the runs with a negligible cost (<= 7 s), the least
# squares slope of useful work on --restart-s over the whole grid as the cost
# of 60 s (with its standard error), the single-pair difference (0 vs 60 s)
# that tools/sim_done_when.sh checks, the cost as the run itself reports it
# (summary.json's restart_work_utilization: restart_s x utilization x GPUs of
# every restart charged before the window's end) and the same by direct
# accounting from jobs.csv (60 s x utilization x GPUs of every restart begun in
# the window), and the cost of 60 s left by the slope of useful work + that
# cost over the grid (the runs with the charge given back): 0 within its se
# when the charge is the whole of the cost and the rest the schedule's chaos.
# Usage: tools/sim_restart_cost.sh PATH/TO/gpucast OUT_DIR [SEEDS]   (SEEDS default 1-3;
#        JOBS=N keeps the first N jobs: a check of the script, not the figures)
set -euo pipefail
B=$(realpath "${1:?usage: sim_restart_cost.sh PATH/TO/gpucast OUT_DIR [SEEDS]}")
OUT=${2:?usage: sim_restart_cost.sh PATH/TO/gpucast OUT_DIR [SEEDS]}
SEEDS=${3:-1-3}
GRID="0 0.000001 0.001 0.25 0.5 1 1.5 2 2.5 3 5 7 10 30 60 60.25 60.5 61.5 62 62.5 63 65 67 120 300"
J=(${JOBS:+--jobs "$JOBS"})
mkdir -p "$OUT"
for r in $GRID; do
  [ -n "$(find "$OUT/r-$r" -name summary.json 2>/dev/null | head -1)" ] && continue
  "$B" simulate --trace philly --cluster "256x RTX3090" --load-factor 2 --seeds "$SEEDS" "${J[@]}" \
    --policy profiling-exclusive --restart-s "$r" --quiet --out "$OUT/r-$r" >/dev/null
done
exec /usr/bin/python3 - "$OUT" <<'PY'
import csv, glob, json, os, statistics as st, sys
out = sys.argv[1]
runs = {}
for f in glob.glob(os.path.join(out, "r-*", "**", "summary.json"), recursive=True):
    d = json.load(open(f))
    runs[(d["restart_s"], d["seed"])] = (d, os.path.dirname(f))
for s in sorted({k[1] for k in runs}):
    pts = sorted((r, d["useful_work_utilization"]) for (r, ss), (d, _) in runs.items() if ss == s)
    null = [u for r, u in pts if r <= 7]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    mx, my = st.mean(xs), st.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    res = [y - (my + b * (x - mx)) for x, y in pts]
    se = (sum(e * e for e in res) / (len(pts) - 2) / sxx) ** 0.5
    d60, dir60 = runs[(60.0, s)]
    w, loss = d60["window_s"], 0.0
    for j in csv.DictReader(open(os.path.join(dir60, "jobs.csv"))):
        # a restart: the real run began after the profiling run, within the window
        if j["run_start_s"] and j["start_s"] and float(j["run_start_s"]) != float(j["start_s"]) and float(j["run_start_s"]) < w:
            loss += 60 * int(j["num_gpus"]) * float(j["true_util"]) / 100
    direct = 100 * loss / (d60["num_gpus"] * w)
    pair = runs[(0.0, s)][0]["useful_work_utilization"] - d60["useful_work_utilization"]
    inrun = d60.get("restart_work_utilization", float("nan"))
    line = (f"seed {s}: {len(pts)} runs; restart <= 7 s: useful work {st.mean(null):.3f} % (sd {st.stdev(null):.3f}, "
            f"{min(null):.2f}-{max(null):.2f}, {len(null)} runs); cost of 60 s by the slope over 0-{max(xs):g} s: "
            f"{-60 * b:.3f} +- {60 * se:.3f} (se) points; one pair (0 vs 60 s): {pair:+.3f}; in the run: {inrun:.3f}; "
            f"direct accounting: {direct:.3f}")
    adj = [(r, d["useful_work_utilization"] + d["restart_work_utilization"])
           for (r, ss), (d, _) in runs.items() if ss == s and "restart_work_utilization" in d]
    if len(adj) == len(pts):
        ya = [y for _, y in sorted(adj)]
        mya = st.mean(ya)
        ba = sum((x - mx) * (y - mya) for x, y in zip(xs, ya)) / sxx
        ra = [y - (mya + ba * (x - mx)) for x, y in zip(xs, ya)]
        sea = (sum(e * e for e in ra) / (len(pts) - 2) / sxx) ** 0.5
        line += f"; with the charge given back: cost of 60 s left by the slope {-60 * ba:+.3f} +- {60 * sea:.3f} (se), sd {st.stdev(ya):.3f}"
    print(line)
PY
