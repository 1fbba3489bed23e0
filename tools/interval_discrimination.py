#!/usr/bin/env python3
"""Does the utilization interval's width rank the held-out errors? (issue 36, item 1)

Usage:
  tools/interval_discrimination.py EVALUATE.json [...]        rows of `gpucast evaluate --json` (predictions[])
  tools/interval_discrimination.py --csv PRED.csv LUCID.csv    the simulator's prediction cache / predictions CSV
                                                               (predicted_util, predicted_low, predicted_high),
                                                               measured gpu_util joined from the Lucid CSV
  tools/interval_discrimination.py --jobs JOBS.csv             a simulation's jobs.csv: one row per distinct
                                                               workload row (model/dataset/bN/ampA), true_util

For each input: coverage and median width (points) of the interval, and how well its width ranks the
rows' absolute errors: AUC of the width for the rows wrong by more than 10 points (the probability a
wrong row's interval is wider than a right row's; ties count half) and Spearman(width, |error|), both in
points and in log1p (the predictor's space: width log1p(high) - log1p(low), error |log1p(measured) -
log1p(predicted)|; the AUC's label stays |error| > 10 points). Then per workload: rows, coverage, mean width.
Standard library only.
"""
import csv
import json
import math
import sys

WRONG_POINTS = 10.0


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else float("nan")


def auc(score, label):
    pos = [s for s, l in zip(score, label) if l]
    neg = [s for s, l in zip(score, label) if not l]
    if not pos or not neg:
        return float("nan")
    tot = 0.0
    for p in pos:
        for q in neg:
            tot += 1.0 if p > q else 0.5 if p == q else 0.0
    return tot / (len(pos) * len(neg))


def median(v):
    s = sorted(v)
    n = len(s)
    return float("nan") if n == 0 else (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2)


def report(name, rows):
    """rows: dicts with workload, measured, predicted, low, high (percent)."""
    rows = [r for r in rows if r["measured"] is not None and not math.isnan(r["measured"])]
    err = [abs(r["predicted"] - r["measured"]) for r in rows]
    width = [r["high"] - r["low"] for r in rows]
    lerr = [abs(math.log1p(r["measured"]) - math.log1p(r["predicted"])) for r in rows]
    lwidth = [math.log1p(r["high"]) - math.log1p(r["low"]) for r in rows]
    wrong = [e > WRONG_POINTS for e in err]
    cov = sum(r["low"] <= r["measured"] <= r["high"] for r in rows) / len(rows)
    print(f"## {name}: {len(rows)} rows, {sum(wrong)} wrong by more than {WRONG_POINTS:g} points")
    print(f"coverage {cov:.2f}, median width {median(width):.1f} points")
    print(f"points: AUC {auc(width, wrong):.2f}, Spearman(width, |error|) {spearman(width, err):.2f}")
    print(f"log1p:  AUC {auc(lwidth, wrong):.2f}, Spearman(width, |error|) {spearman(lwidth, lerr):.2f}")
    print("| workload | rows | coverage | mean width (points) | mean |error| (points) |")
    print("|---|---|---|---|---|")
    by = {}
    for r, e in zip(rows, err):
        by.setdefault(r["workload"], []).append((r, e))
    for w in sorted(by):
        v = by[w]
        c = sum(r["low"] <= r["measured"] <= r["high"] for r, _ in v) / len(v)
        print(f"| {w} | {len(v)} | {c:.2f} | {sum(r['high'] - r['low'] for r, _ in v) / len(v):.1f} | "
              f"{sum(e for _, e in v) / len(v):.1f} |")
    print()


def main(argv):
    if argv and argv[0] == "--jobs":
        rows = {}
        with open(argv[1]) as f:
            for r in csv.DictReader(f):
                if r["workload"] in rows or not r["predicted_low"]:
                    continue
                rows[r["workload"]] = {"workload": r["workload"].rsplit("/", 2)[0], "measured": float(r["true_util"]),
                                       "predicted": float(r["predicted_util"]), "low": float(r["predicted_low"]),
                                       "high": float(r["predicted_high"])}
        report(argv[1], list(rows.values()))
        return 0
    if argv and argv[0] == "--csv":
        pred_csv, lucid = argv[1], argv[2]
        measured = {}
        with open(lucid) as f:
            for r in csv.DictReader(f):
                measured[(r["model"], r["dataset"], int(r["batchsize"]), int(r["amp"]))] = float(r["gpu_util"])
        rows = []
        with open(pred_csv) as f:
            for r in csv.DictReader(f):
                key = (r["model"], r["dataset"], int(r.get("batchsize") or r.get("batch")), int(r["amp"]))
                rows.append({"workload": r["model"] + "/" + r["dataset"], "measured": measured.get(key),
                             "predicted": float(r["predicted_util"]), "low": float(r["predicted_low"]),
                             "high": float(r["predicted_high"])})
        report(pred_csv, rows)
        return 0
    for path in argv:
        with open(path) as f:
            top = json.load(f)
        for j in top.get("results", [top]):
            one(path, j)
    return 0


def one(path, j):
    if True:
        rows = [{"workload": p["workload"], "measured": p["measured"],
                 "predicted": p["predicted"], "low": p["low"], "high": p["high"]} for p in j["predictions"]]
        report(f"{path} ({j.get('algo')}, {j.get('split')}, {j.get('interval_method')})", rows)
        # By held-out GPU too (logo / gpu: splits).
        gpus = sorted({p.get("gpu", "") for p in j["predictions"]})
        if len(gpus) > 1:
            for g in gpus:
                sub = [dict(r, gpu=p.get("gpu")) for r, p in zip(rows, j["predictions"]) if p.get("gpu") == g]
                c = sum(r["low"] <= r["measured"] <= r["high"] for r in sub) / len(sub)
                print(f"GPU {g}: {len(sub)} rows, coverage {c:.2f}, median width "
                      f"{median([r['high'] - r['low'] for r in sub]):.1f}")
            print()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
