#!/usr/bin/python3
"""The noise ordering over draws of the noise (issue 34, docs/simulator.md "one draw is one sample").

Reads a tools/sim_done_when.sh (or tools/sweep.sh) output: DIR/capacity-cap/oracle and the draws
DIR/capacity-cap/noisy-SD (draw 0) and DIR/capacity-cap/noisy-SD@K (noisy:SD@K), each with
seed-S/summary.json and seed-S/jobs.csv. Prints per seed the oracle's mean JCT, each noise
level's mean over its draws +- the standard error (and the draws' sd), useful work, and the
correlation over draws between a run's mean JCT and its jobs' mean signed prediction error
(predicted - true utilization, points): whether the draw-to-draw spread is the realised bias.
Usage: tools/sim_noise_draws.py DIR [SUBDIR]   (SUBDIR default capacity-cap)
       tools/sim_noise_draws.py --scaled-oracle F OUT.csv
         writes a predictions CSV (simulate --predictions OUT.csv): every workload row of
         $GPUCAST_DATA/lucid/single_data.csv predicted at F x its measured utilization (clamped
         at 100), memory its measured memory (as oracle predictions know it): a uniform bias.
"""
import csv
import glob
import json
import os
import statistics as st
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--scaled-oracle":
        if len(sys.argv) != 4:
            sys.exit(__doc__)
        f = float(sys.argv[2])
        src = os.path.join(os.environ.get("GPUCAST_DATA", "data"), "lucid", "single_data.csv")
        with open(sys.argv[3], "w") as o:
            o.write("model,dataset,batchsize,amp,predicted_util,pred_mem_mib,pred_mem_high_mib\n")
            for r in csv.DictReader(open(src)):
                u = min(100.0, float(r["gpu_util"]) * f)
                o.write(f"{r['model']},{r['dataset']},{r['batchsize']},{r['amp']},{u:.6g},{r['gmem']},{r['gmem']}\n")
        return
    base = os.path.join(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "capacity-cap")

    def load(d, s):
        p = os.path.join(d, f"seed-{s}")
        if not os.path.exists(os.path.join(p, "summary.json")):
            return None
        r = json.load(open(os.path.join(p, "summary.json")))
        n = e = 0
        for row in csv.DictReader(open(os.path.join(p, "jobs.csv"))):
            e += float(row["predicted_util"]) - float(row["true_util"])
            n += 1
        return r["jct_mean_s"] / 3600, r["useful_work_utilization"], e / n if n else 0.0

    for s in (1, 2, 3):
        o = load(os.path.join(base, "oracle"), s)
        print(f"seed {s}: oracle " + (f"{o[0]:.1f} h, useful {o[1]:.2f}%" if o else "missing"))
        for sd in (15, 30):
            dirs = [os.path.join(base, f"noisy-{sd}")] + sorted(glob.glob(os.path.join(base, f"noisy-{sd}@*")))
            got = [x for x in (load(d, s) for d in dirs) if x]
            if not got:
                continue
            j = [x[0] for x in got]
            u = [x[1] for x in got]
            e = [x[2] for x in got]
            m = st.mean(j)
            sd_ = st.stdev(j) if len(j) > 1 else 0.0
            r = st.correlation(e, j) if len(j) > 2 else float("nan")
            print(f"  noisy:{sd} x{len(j)}: {m:.1f} +- {sd_ / len(j) ** 0.5:.1f} h (sd {sd_:.1f}; draws "
                  + ", ".join(f"{x:.1f}" for x in j) + f"); useful {st.mean(u):.2f}%; signed error "
                  f"{min(e):+.2f}..{max(e):+.2f} points, correlation with mean JCT {r:+.2f}")


if __name__ == "__main__":
    main()
