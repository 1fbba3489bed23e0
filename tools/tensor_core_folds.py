#!/usr/bin/env python3
"""What sets the held-out-GPU (logo) intervals with and without `--tensor-core-split` (issue 36).

In `evaluate --split logo` on the shared rows each GPU type is one data set (Lucid: RTX3090, MIGProfiler:
A100-80GB, Pollux: T4, step-only), so a fold's model is `gpucast train` on the other two. Its GPU transfer
pass (TransferScores in src/predict/predictor.cc) refits the physics on each of the two types alone and
predicts the other: those scores (model file `calibration.transfer_scores` / `transfer_util_scores`, with
their GPU types) are what widen the held-out GPU's step and utilization bands (GroupedWindow). This script
trains, for the A100 and the RTX 3090 held out (the folds with held-out utilization rows), each fold's model
and the one-type models of its transfer pass, with and without the split, and prints per model its fitted
efficiencies (`eff_tensor_core_identified`: whether an amp row with a utilization was there to fit the
split, src/predict/physics_regressor.cc) and per GPU type the quantiles of its transfer scores; for the
utilization scores also the range of the predicted utilization and how many were predicted at 90 % or
less (a held-out row predicted at 90 % is widened only by scores predicted no higher: TransferUtilGroupsFor,
at least kMinGroupScores = 10 of them per type, else the busy-held rule with the step window).

Usage: tensor_core_folds.py GPUCAST [MODELS_DIR]
  GPUCAST     the gpucast binary; the data under $GPUCAST_DATA
  MODELS_DIR  keep the model files there (default: a temporary folder); files already there are read,
              not retrained (so a folder trained by another build can be summarised)
About two minutes on two shared cores.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

DATA = os.environ.get("GPUCAST_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
SETS = {"RTX3090": "lucid/single_data.csv", "A100-80GB": "migprofiler-a100/bert_train.csv", "T4": "pollux-t4"}
# Each fold with held-out utilization rows: its two training types.
FOLDS = {"A100-80GB": ["RTX3090", "T4"], "RTX3090": ["A100-80GB", "T4"]}


def train(b, out_dir, types, split):
    name = "_".join(t.split("-")[0] for t in types) + ("_split" if split else "_one")
    path = os.path.join(out_dir, name + ".json")
    if not os.path.exists(path):
        cmd = [b, "train", "--algo", "physics", "-q", "-o", path]
        for t in types:
            cmd += ["--data", os.path.join(DATA, SETS[t])]
        if split:
            cmd.append("--tensor-core-split")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return name, json.load(open(path))


def find(j, key):
    if isinstance(j, dict):
        if key in j:
            return j[key]
        for v in j.values():
            r = find(v, key)
            if r is not None:
                return r
    elif isinstance(j, list):
        for v in j:
            r = find(v, key)
            if r is not None:
                return r
    return None


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    b = os.path.realpath(sys.argv[1])
    out_dir = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    os.makedirs(out_dir, exist_ok=True)
    print("| held out | trained on | split | eff_compute | eff_tensor_core (identified) | amp_host_factor |")
    print("|---|---|---|---|---|---|")
    scores = []
    for held, types in FOLDS.items():
        for ts in [types] + [[t] for t in types]:
            for split in (False, True):
                name, j = train(b, out_dir, ts, split)
                th = find(j, "theta")
                tc = th.get("eff_tensor_core")
                ident = find(j, "eff_tensor_core_identified")
                tcs = "-" if tc is None else "%.3f (%s)" % (tc, "?" if ident is None else "yes" if ident else "no")
                print("| %s | %s | %s | %.3f | %s | %.3f |" % (held if ts == types else "(transfer pass)",
                      " + ".join(ts), "on" if split else "off", th["eff_compute"], tcs, th["amp_host_factor"]))
                if ts == types:
                    scores.append((held, split, find(j, "calibration")))
    print()
    print("Transfer scores of each fold's model (each GPU type predicted by a fit on the fold's other type):")
    print()
    print("| held out | split | scores | GPU type | n | 10% | median | 90% | predicted util | at most 90 % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for held, split, cal in scores:
        by = collections.defaultdict(list)
        for s, g in zip(cal.get("transfer_scores", []), cal.get("transfer_score_gpus", [])):
            by[g].append(s)
        for g, v in sorted(by.items()):
            print("| %s | %s | step | %s | %d | %.2f | %.2f | %.2f | | |" % (held, "on" if split else "off", g, len(v),
                  q(v, 0.1), q(v, 0.5), q(v, 0.9)))
        byu = collections.defaultdict(list)
        for e in cal.get("transfer_util_scores", []):
            byu[e.get("gpu")].append((e["predicted_util"], e["score"]))
        for g, v in sorted(byu.items()):
            s = [x[1] for x in v]
            p = [x[0] for x in v]
            print("| %s | %s | utilization | %s | %d | %.2f | %.2f | %.2f | %.1f-%.1f | %d |" % (
                held, "on" if split else "off", g, len(v), q(s, 0.1), q(s, 0.5), q(s, 0.9), min(p), max(p),
                sum(1 for x in p if x <= 90)))


if __name__ == "__main__":
    main()
