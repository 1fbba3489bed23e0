#!/usr/bin/env python3
"""The power-limited compute clock (src/features/gpu_specs.h SustainedComputeFraction), fitted on Zeus'
power-capped runs. Usage: zeus_power_fit.py [DATA] (default $GPUCAST_DATA, else ../shared/data).

Zeus (zeus/summary_power_<gpu>.csv) ran each job and batch at several power caps. For the GPU-bound
jobs (BERT-base/SQuAD, ResNet-50/ImageNet) the epoch time at the highest cap over the epoch time at
a cap P is the fraction of its full compute rate the GPU keeps at P; per GPU and cap the median over
jobs and batches is one point, at w = P / SMs (watts per SM). A GPU's dynamic power grows about as
f V^2 with V rising with the clock f (P_dyn ~ f^3), on top of a part that does not scale with the clock,
so the model is  fraction(w) = min(1, ((w - w0) / (w1 - w0))^(1/3)): w0 the watts per SM that do no
compute, w1 the watts per SM at which the full clock is reached. w0, w1: least squares in log
fraction on a 0.01 W grid. Printed: the fit on all four GPUs (the shipped constants), and each GPU
held out in turn (fit on the other three, its points predicted) with the median and mean |error|.
Stdlib only."""
import collections
import csv
import math
import os
import statistics
import sys

SMS = {"a40": 84, "p100": 56, "rtx6000": 72, "v100": 80}  # SMs: src/features/gpu_table.cc
JOBS = ("bert_base_uncased", "resnet50")
EXPONENT = 1 / 3


def points(data):
    pts = []
    for g, sms in SMS.items():
        rows = list(csv.DictReader(open(os.path.join(data, "zeus", "summary_power_%s.csv" % g))))
        runs = collections.defaultdict(dict)
        for r in rows:
            runs[(r["network"], r["batch_size"])][float(r["power_limit"])] = float(r["time_per_epoch"])
        pmax = max(float(r["power_limit"]) for r in rows)
        by_cap = collections.defaultdict(list)
        for (net, _), t in runs.items():
            if net in JOBS and pmax in t:
                for p, tp in t.items():
                    if p < pmax:
                        by_cap[p].append(t[pmax] / tp)
        for p in sorted(by_cap):
            pts.append((g, p / sms, statistics.median(by_cap[p])))
    return pts


def fraction(w0, w1, w):
    return 1e-3 if w <= w0 else min(1.0, ((w - w0) / (w1 - w0)) ** EXPONENT)


def fit(pts):
    best = None
    for i in range(0, 200):  # w0 0 .. 1.99 W per SM
        w0 = i / 100
        for k in range(150, 500):  # w1 1.50 .. 4.99 W per SM
            w1 = k / 100
            if w1 <= w0 + 0.1:
                continue
            e = sum(math.log(fraction(w0, w1, w) / f) ** 2 for _, w, f in pts)
            if best is None or e < best[0]:
                best = (e, w0, w1)
    return best[1], best[2]


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "GPUCAST_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    pts = points(data)
    w0, w1 = fit(pts)
    print("points: %d (GPU, cap) pairs of %s" % (len(pts), ", ".join(JOBS)))
    print("fit on all GPUs: w0 = %.2f W/SM, w1 = %.2f W/SM; T4 (70 W, 40 SMs): %.3f" % (w0, w1, fraction(w0, w1, 70 / 40)))
    errs = []
    for g in SMS:
        a, b = fit([p for p in pts if p[0] != g])
        e = [abs(fraction(a, b, w) / f - 1) for h, w, f in pts if h == g]
        errs += e
        print("without %-7s w0 = %.2f, w1 = %.2f; its %d points: median |error| %.3f, max %.3f; T4 %.3f"
              % (g, a, b, len(e), statistics.median(e), max(e), fraction(a, b, 70 / 40)))
    print("each GPU held out: median |error| %.3f, mean %.3f over %d points"
          % (statistics.median(errs), statistics.mean(errs), len(errs)))


if __name__ == "__main__":
    main()
