#!/usr/bin/env python3
"""Candidate per-job signals of a large held-out error (issue 36, item 1; docs/predictor.md,
"Does the width rank the errors?"). Exploration, not part of the predictor.

Usage: tools/interval_signals.py GPUCAST MODEL.json EVALUATE.json [LUCID.csv]
  GPUCAST        the binary (its `predict --json` gives each Lucid row's features)
  MODEL.json     any model file of `gpucast train` (the features do not depend on it; its band does)
  EVALUATE.json  `gpucast evaluate --data LUCID --split lowo --algo physics --repeats 1 --json`

Each candidate is computed for a held-out row from its features and the other workloads' rows only
(features sign-log transformed, standardised on those rows) and scored on the held-out rows against the
evaluation's errors: AUC for the rows wrong by more than 10 points, Spearman with |error| in points and log1p.
"""
import csv
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interval_discrimination import auc, spearman  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def features(binary, model, lucid):
    cat = json.load(open(os.path.join(ROOT, "models/catalog.json")))
    wl = {(w["model"], w["dataset"]): w for w in cat["workloads"]}
    rows = []
    for r in csv.DictReader(open(lucid)):
        w = wl[(r["model"], r["dataset"])]
        cmd = [binary, "predict", "-p", model, "-b", r["batchsize"], "--json", "-q"]
        for g in w["graphs"]:
            # `predict -m` takes whole passes: a fractional repeat (TD3's actor, 0.5) or forward-only
            # passes are rounded up to whole forward+backward ones, said on stderr (int() dropped
            # the actor). The features are then an approximation of the catalog's job.
            rep = float(g.get("repeat", 1))
            n = max(1, math.ceil(rep))
            if n != rep or g.get("forward_only"):
                print(f"{w['model']}/{w['dataset']}: {g['file']} repeat {rep:g}, forward_only "
                      f"{g.get('forward_only', 0)}: passed {n} time(s) to predict", file=sys.stderr)
            cmd += ["-m", os.path.join(ROOT, "models", g["file"])] * n
        if r["amp"] == "1":
            cmd.append("--amp")
        cmd += [a for k, v in w.get("dims", {}).items() for a in ("--dim", f"{k}={v}")]
        cmd += [a for k, v in w.get("attrs", {}).items() for a in ("--attr", f"{k}={v}")]
        j = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        rows.append({"workload": r["model"] + "/" + r["dataset"], "batch": int(r["batchsize"]),
                     "amp": r["amp"] == "1", "features": j["features"], "uncertainty": j.get("uncertainty") or {}})
    return rows


def main(argv):
    binary, model, evaluation = argv[:3]
    lucid = argv[3] if len(argv) > 3 else os.path.join(ROOT, "../shared/data/lucid/single_data.csv")
    feats = features(binary, model, lucid)
    ev = json.load(open(evaluation))["results"][0]["predictions"]
    pred = {(p["workload"], int(p["batch"]), bool(p["amp"])): p for p in ev}
    names = sorted(feats[0]["features"])
    tf = lambda v: math.copysign(math.log1p(abs(v)), v)  # noqa: E731
    X = [[tf(r["features"][n]) for n in names] for r in feats]
    W = [r["workload"] for r in feats]
    P = [pred[(r["workload"], r["batch"], r["amp"])] for r in feats]
    y = [math.log1p(p["measured"]) for p in P]
    lp = [math.log1p(p["predicted"]) for p in P]

    def dist(a, b, mu, sd):
        k = [j for j in range(len(a)) if sd[j] > 1e-12]
        return math.sqrt(sum(((a[j] - b[j]) / sd[j]) ** 2 for j in k) / max(1, len(k)))

    out = []
    for i in range(len(X)):
        train = [t for t in range(len(X)) if W[t] != W[i]]
        n = len(train)
        mu = [sum(X[t][j] for t in train) / n for j in range(len(names))]
        sd = [math.sqrt(sum((X[t][j] - mu[j]) ** 2 for t in train) / n) for j in range(len(names))]
        d = sorted((dist(X[i], X[t], mu, sd), t) for t in train)
        groups = {}
        for t in train:
            groups.setdefault(W[t], []).append(X[t])
        cen = min(dist(X[i], [sum(c[j] for c in v) / len(v) for j in range(len(names))], mu, sd)
                  for v in groups.values())
        knn = sum(y[t] for _, t in d[:5]) / 5
        f = feats[i]["features"]
        unstated = f["data_on_gpu"] == 0 and f["rl_env"] == 0 and f["loader_ms_per_sample_known"] == 0
        gpu_ms_per_sample = f["est_gpu_busy_ms"] / f["batch_size"]
        p = P[i]
        out.append({
            "workload": W[i], "err": abs(p["predicted"] - p["measured"]), "lerr": abs(y[i] - lp[i]),
            "nearest training row": d[0][0],
            "nearest training workload centroid": cen,
            "physics vs 5-NN disagreement": abs(knn - lp[i]),
            "-GPU ms per sample (unstated pipeline)": -math.log(gpu_ms_per_sample) if unstated else -99,
            "input bytes per GPU ms (unstated pipeline)":
                math.log(f["input_bytes_per_sample"] / gpu_ms_per_sample) if unstated else -99,
            "band fall (util_fall_log1p)": feats[i]["uncertainty"].get("util_fall_log1p", 0),
            "interval width, points": p["high"] - p["low"],
            "interval width, log1p": math.log1p(p["high"]) - math.log1p(p["low"]),
        })
    wrong = [o["err"] > 10 for o in out]
    print(f"{len(out)} held-out rows, {sum(wrong)} wrong by more than 10 points")
    print("| candidate | AUC (wrong > 10 points) | Spearman, |error| points | Spearman, |error| log1p |")
    print("|---|---|---|---|")
    for k in [k for k in out[0] if k not in ("workload", "err", "lerr")]:
        v = [o[k] for o in out]
        print(f"| {k} | {auc(v, wrong):.2f} | {spearman(v, [o['err'] for o in out]):.2f} | "
              f"{spearman(v, [o['lerr'] for o in out]):.2f} |")
    print("\n| workload | mean |error| | nearest training row | centroid | 5-NN disagreement |")
    print("|---|---|---|---|---|")
    for w in sorted(set(W)):
        v = [o for o in out if o["workload"] == w]
        m = lambda k: sum(o[k] for o in v) / len(v)  # noqa: E731
        print(f"| {w} | {m('err'):.1f} | {m('nearest training row'):.2f} | "
              f"{m('nearest training workload centroid'):.2f} | {m('physics vs 5-NN disagreement'):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
