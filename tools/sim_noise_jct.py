#!/usr/bin/python3
"""Why `predictive`'s mean JCT is not monotone in the prediction noise (issue 34).

Reads a tools/sweep.sh output (philly/oracle and accuracy/noisy-15, load 2)
and prints, per seed, each group of jobs' contribution to the mean JCT (hours;
the contributions add up to the mean) under oracle and noisy:15 predictions,
the jobs grouped by their noisy:15 error (predicted exactly 0 by the clamp,
which only the former additive control did: the group is empty and not printed
with the log1p control of 6ddc8cd; under-predicted by more than 5 points; within 5; over-predicted by more than
5), and the window means of jobs running and queued. At load 2 the queue
holds thousands of jobs for weeks, so the mean JCT is mostly queueing, and a
job packed by an under-stated utilization starts before the jobs ahead of it.
Usage: tools/sim_noise_jct.py SWEEP_DIR [NOISY_DIR [ORACLE_DIR]]
       (NOISY_DIR default accuracy/noisy-15, ORACLE_DIR philly/oracle; under the capacity cap:
        tools/sim_noise_jct.py SWEEP_DIR capacity-cap/noisy-15 capacity-cap/oracle)
A run directory is DIR/seed-S/predictive, or DIR/seed-S itself when the run had one policy.
"""
import csv
import json
import os
import sys


def load(d):
    jobs = {r["job_id"]: r for r in csv.DictReader(open(os.path.join(d, "jobs.csv")))}
    s = json.load(open(os.path.join(d, "summary.json")))
    return jobs, s


def window_means(d, jobs, s):
    w = s["window_s"]
    run = sum(max(0.0, min(float(r["end_s"]), w) - min(float(r["run_start_s"] or r["start_s"]), w))
              for r in jobs.values() if r["end_s"])
    pts = [(float(r["t_s"]), float(r["queued"])) for r in csv.DictReader(open(os.path.join(d, "utilization.csv")))]
    q = sum(v * (min(t1, w) - t0) for (t0, v), (t1, _) in zip(pts, pts[1:]) if t0 < w)
    return run / w, q / w


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sweep = sys.argv[1]
    noisy = sys.argv[2] if len(sys.argv) > 2 else "accuracy/noisy-15"
    oracle = sys.argv[3] if len(sys.argv) > 3 else "philly/oracle"

    def run_dir(d, seed):
        multi = os.path.join(sweep, d, "seed-%d/predictive" % seed)
        return multi if os.path.exists(multi) else os.path.join(sweep, d, "seed-%d" % seed)

    for seed in (1, 2, 3):
        od, nd = run_dir(oracle, seed), run_dir(noisy, seed)
        if not (os.path.exists(od) and os.path.exists(nd)):
            print(f"seed {seed}: no runs under {od} and {nd}")
            continue
        (o, so), (n, sn) = load(od), load(nd)
        total = len(o)
        groups = {}
        for i, a in o.items():
            b = n[i]
            p, t = float(b["predicted_util"]), float(a["true_util"])
            k = "predicted 0" if p == 0 else "under >5" if p - t < -5 else "over >5" if p - t > 5 else "within 5"
            g = groups.setdefault(k, [0, 0.0, 0.0])
            g[0] += 1
            g[1] += (float(a["end_s"]) - float(a["submit_s"])) / 3600 / total
            g[2] += (float(b["end_s"]) - float(b["submit_s"])) / 3600 / total
        ro, qo = window_means(od, o, so)
        rn, qn = window_means(nd, n, sn)
        print(f"seed {seed}: mean JCT oracle {so['jct_mean_s'] / 3600:.1f} h, {sn['predictions']} "
              f"{sn['jct_mean_s'] / 3600:.1f} h; useful work {so['useful_work_utilization']:.2f} vs "
              f"{sn['useful_work_utilization']:.2f} %; window means: running jobs {ro:.0f} vs {rn:.0f}, "
              f"queued {qo:.0f} vs {qn:.0f}")
        for k in ("predicted 0", "under >5", "within 5", "over >5"):
            if k in groups:
                c, a, b = groups[k]
                print(f"  {k:<12} {c:6d} jobs: {a:6.1f} -> {b:6.1f} h ({b - a:+.1f})")


if __name__ == "__main__":
    main()
