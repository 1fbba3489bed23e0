#!/usr/bin/env python3
"""What `gpucast train`'s default data does off the GPU it was measured on (docs/predictor.md, "The
default training data"). For each choice of training rows, the measurements none of them contains:

  - the physics fit's efficiencies (`train --algo physics`, what `auto` picks on both);
  - Pollux' T4 step times (`evaluate --steps pollux-t4`: one GPU, every run) and Zeus' step-time
    ratios between GPUs (`evaluate --steps zeus`): no T4 or Zeus row is trained on;
  - NVIDIA's published ResNet-50 throughput (tools/published_resnet50_check.sh with the model):
    median |predicted / published - 1|, how many of its recipe rows the 80% interval holds, and the
    error of the A100 / V100 ratio of the recipe's FP32 (TF32 on the A100) and AMP rows;
  - the RTX 3090 rows held out by workload (`evaluate --split lowo --algo physics --repeats 1`;
    the A100 rows, where in training, stay in the other folds), then every row of the choice held out
    by workload: the coverage of the 80% interval (with its 90% interval over workloads, a seeded
    bootstrap), and how far outside it each missed row is.

Usage: tools/default_data_check.py GPUCAST [--data DIR]   (DIR: ../shared/data's layout, default
$GPUCAST_DATA). Stdlib only; prints Markdown.
"""
import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"default_data_check: {' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


def published(gpucast, model):
    """(median |ratio - 1|, rows held by the interval, rows, A100/V100 FP32 ratio error, AMP's)."""
    out = run(["bash", os.path.join(HERE, "tools/published_resnet50_check.sh"), "--jsonl", gpucast, model])
    rows = [json.loads(line) for line in out.splitlines()]
    # The recipe's rows: TF32 as PyTorch's default (not stated).
    recipe = [r for r in rows if not any(a.startswith("tf32=") for a in r["stated"])]
    errs = [abs(r["predicted_img_s"] / r["published_img_s"] - 1) for r in recipe]
    held = sum(r["low_img_s"] <= r["published_img_s"] <= r["high_img_s"] for r in recipe)

    def ratio_err(prec):
        a, v = (next(r for r in recipe if r["gpu"] == g and r["precision"] == prec) for g in ("A100-80GB", "V100-16GB"))
        return abs((a["predicted_img_s"] / v["predicted_img_s"]) / (a["published_img_s"] / v["published_img_s"]) - 1)
    return statistics.median(errs), held, len(recipe), ratio_err("FP32"), ratio_err("AMP")


def steps(gpucast, data_args, data):
    d = json.loads(run([gpucast, "evaluate", *data_args, "--steps", f"{data}/pollux-t4", "--steps",
                        f"{data}/zeus", "--algo", "physics", "--json", "-q"]))
    out = {}
    for s in d["steps"]:
        if s["data"].endswith("zeus"):
            out["zeus"] = s["zeus_median_ratio_error"]
            out["zeus_jobs"] = {r["job"]: r["median_ratio_error"] for r in s["zeus_ratios"]}
        else:
            for o in s["overall"]:
                out["pollux " + o["class"]] = (o["median_ape"], o["coverage"])
    return out


def lowo(gpucast, data_args):
    """The rows held out by workload: the RTX 3090's figures, every row's coverage and width, and how
    far outside its interval each missed row is (points)."""
    d = json.loads(run([gpucast, "evaluate", *data_args, "--split", "lowo", "--algo", "physics",
                        "--repeats", "1", "--json", "-q"]))
    every = [p for p in d["results"][0]["predictions"] if p.get("measured") is not None]
    preds = [p for p in every if p["gpu"] == "RTX3090"]
    sq = lambda p: (math.log1p(p["predicted"]) - math.log1p(p["measured"])) ** 2
    by = {}
    for p in preds:
        by.setdefault(p["workload"], []).append(p)
    per_wl = [math.sqrt(sum(map(sq, ps)) / len(ps)) for ps in by.values()]
    stepe = [abs(p["step_predicted_ms"] / p["step_measured_ms"] - 1) for p in preds
             if p.get("step_measured_ms")]
    held = lambda p: p["low"] <= p["measured"] <= p["high"]
    # Each missed row: its workload and how far outside its interval it is (points).
    misses = [(p["workload"], max(p["low"] - p["measured"], p["measured"] - p["high"])) for p in every if not held(p)]
    # The coverage's 90% interval over workloads (the exchangeable unit): resamples of the
    # workloads with replacement, seeded.
    held_by = {}
    for p in every:
        held_by.setdefault(p["workload"], []).append(held(p))
    groups, rng, resamples = list(held_by.values()), random.Random(1), 2000
    boot = []
    for _ in range(resamples):
        pick = [rng.choice(groups) for _ in groups]
        boot.append(sum(map(sum, pick)) / sum(map(len, pick)))
    boot.sort()
    return {"rows": len(preds), "workloads": len(by), "rmsle": math.sqrt(sum(map(sq, preds)) / len(preds)),
            "median_wl": statistics.median(per_wl),
            "coverage": sum(map(held, preds)) / len(preds),
            "width": statistics.median(p["high"] - p["low"] for p in preds),
            "step": statistics.median(stepe),
            "all_rows": len(every), "all_coverage": sum(map(held, every)) / len(every),
            "all_coverage_ci": (boot[int(0.05 * resamples)], boot[int(0.95 * resamples) - 1]),
            "all_width": statistics.median(p["high"] - p["low"] for p in every),
            "misses_within_1": sum(o <= 1 for _, o in misses), "misses_1_5": sum(1 < o <= 5 for _, o in misses),
            "misses_over_5": sum(o > 5 for _, o in misses),
            "misses_workloads": sorted({w for w, o in misses if o > 5})}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gpucast")
    ap.add_argument("--data", default=os.environ.get("GPUCAST_DATA", ""))
    a = ap.parse_args()
    if not a.data or not os.path.isdir(a.data):
        sys.exit("default_data_check: no data folder (--data DIR or $GPUCAST_DATA)")
    lucid = f"{a.data}/lucid/single_data.csv"
    mig = f"{a.data}/migprofiler-a100/bert_train.csv"
    choices = [("Lucid (RTX 3090), the default before 7 December", [lucid]),
               ("Lucid + MIGProfiler (RTX 3090 + A100), the default", [lucid, mig])]
    res = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, files) in enumerate(choices):
            data_args = [x for f in files for x in ("--data", f)]
            model = os.path.join(tmp, f"p{i}.json")
            run([a.gpucast, "train", *data_args, "--algo", "physics", "--out", model, "--quiet"])
            theta = json.load(open(model))["regressor"]["theta"]
            res.append((name, theta, steps(a.gpucast, data_args, a.data), published(a.gpucast, model),
                        lowo(a.gpucast, data_args)))
    print("Each choice of training rows, scored on measurements it does not contain (`tools/default_data_check.py`):")
    print()
    print("| training rows | eff_compute | eff_memory | Pollux T4, one GPU: median step error (coverage) | "
          "Pollux, all runs | Zeus ratios: all / BERT-base / ResNet-50 | published ResNet-50: median error, "
          "rows in the 80% interval, A100 / V100 ratio error FP32 / AMP | RTX 3090 held out by workload: "
          "RMSLE, median per workload, coverage, median width, step error | every row held out by workload "
          "(both GPUs): rows, coverage [90% CI, workload bootstrap], median width | those misses by distance outside the interval: at most 1 "
          "point / 1-5 / over 5 (the workloads over 5) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, th, st, pub, lw in res:
        p1, pa = st["pollux 1 GPU"], st["pollux all"]
        zj = st["zeus_jobs"]
        print(f"| {name} | {th['eff_compute']:.3f} | {th['eff_memory']:.3f} | {100 * p1[0]:.1f}% ({p1[1]:.2f}) | "
              f"{100 * pa[0]:.1f}% ({pa[1]:.2f}) | {100 * st['zeus']:.1f}% / {100 * zj['BERT-base/SQuAD']:.1f}% / "
              f"{100 * zj['ResNet-50/ImageNet']:.1f}% | {100 * pub[0]:.1f}%, {pub[1]} of {pub[2]}, "
              f"{100 * pub[3]:.1f}% / {100 * pub[4]:.1f}% | {lw['rmsle']:.3f}, {lw['median_wl']:.3f}, "
              f"{lw['coverage']:.2f}, {lw['width']:.1f}, {100 * lw['step']:.1f}% | {lw['all_rows']}, "
              f"{lw['all_coverage']:.2f} [{lw['all_coverage_ci'][0]:.2f}, {lw['all_coverage_ci'][1]:.2f}], "
              f"{lw['all_width']:.1f} | {lw['misses_within_1']} / {lw['misses_1_5']} / "
              f"{lw['misses_over_5']} ({', '.join(lw['misses_workloads'])}) |")


if __name__ == "__main__":
    main()
