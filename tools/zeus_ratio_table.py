#!/usr/bin/env python3
"""Zeus cross-GPU step-time ratios, per job and GPU pair, with what binds each predicted step.

Issue 36 (step time): `gpucast evaluate --steps zeus` compares, for each job and batch measured on two of
Zeus' GPUs (A40, V100 PCIe 32GB, Quadro RTX 6000, P100 PCIe 16GB; summary_power_*.csv at the highest power
limit), the predicted ratio of their step times with the measured ratio of their epoch times. This script
prints that comparison per job and GPU pair (median predicted and measured ratio over the batches both GPUs
ran, the median |predicted / measured - 1|), and, per job and GPU, the physics model's step split into its
terms (src/predict/physics_regressor.cc, docs/predictor.md "physics"): compute (est_compute_ms / eff_compute),
memory (est_memory_ms / eff_memory), per-kernel GPU time (kernel_count x gpu_s_per_kernel), the host's
launches (kernel_count x host_s_per_kernel) and the per-step host work; and, from the ratios alone, each GPU's factor
against the model (which GPU a job's ratios say is off). The ratios of one job determine the factors up to a
common scale, so their geometric mean is set to 1. Only the jobs the issue's public runs have (ResNet-50 and
BERT-base); NeuMF's ratios are its hosts' (docs/predictor.md).

Usage: zeus_ratio_table.py GPUCAST [EVALUATE.json PREDICTOR.json]
  GPUCAST        the gpucast binary (predict --json for each job's features on each GPU)
  EVALUATE.json  `gpucast evaluate --data LUCID --data MIG --steps ZEUS --algo physics --json`
  PREDICTOR.json `gpucast train --data LUCID --data MIG --algo physics --out PREDICTOR.json` (its fitted
                 constants; evaluate --steps trains the same model on the same rows)
  Without the two files the script runs both commands itself (about a minute), with LUCID, MIG and ZEUS
  under $GPUCAST_DATA (lucid/single_data.csv, migprofiler-a100/bert_train.csv, zeus).
The terms use the attributes evaluate gives the Zeus jobs (ZeusAttrs() in src/predict/step_eval.cc: tf32=1, no
loader workers); the script stops if they do not add up to evaluate's predicted step. One what-if is printed
beside: the A40 without TF32.
"""
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUS = ["A40", "V100-PCIE-32GB", "RTX6000", "P100-PCIE-16GB"]  # kZeusGpus' order (step_eval.cc)
SUFFIXES = ["a40", "v100", "rtx6000", "p100"]  # their files, summary_power_<suffix>.csv
IMAGENET_TRAIN = 1281167  # ILSVRC2012 training images
ZEUS_ATTRS = ["tf32=1", "loader_workers=0"]  # ZeusAttrs() in src/predict/step_eval.cc
# job name in the evaluate JSON -> graph, dims (StepJobs() in src/predict/step_eval.cc)
JOBS = {
    "ResNet-50/ImageNet": ("resnet50.onnx", []),
    "BERT-base/SQuAD": ("bert.onnx", ["seq=384"]),
}


def lstsq(a, y):
    """Least squares by the normal equations (Gauss-Jordan; a few unknowns)."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * v for r, v in zip(a, y))] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda k: abs(m[k][c]))
        m[c], m[p] = m[p], m[c]
        for k in range(n):
            if k != c:
                f = m[k][c] / m[c][c]
                m[k] = [u - f * w for u, w in zip(m[k], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def features(gpucast, pred_path, job, gpu, batch, attrs):
    graph, dims = JOBS[job]
    cmd = [gpucast, "predict", "-p", pred_path, "-m", os.path.join(ROOT, "models", graph), "-b", str(batch),
           "--gpu", gpu, "--json", "--quiet"]
    for d in dims:
        cmd += ["--dim", d]
    for at in attrs:
        cmd += ["--attr", at]
    return json.loads(run(cmd))["features"]


def terms(f, theta):
    """The physics step's terms (ms) for a job with no loader, no AMP and no RL environment (the Zeus jobs):
    step = max(compute + memory + per-kernel, launch) + per-step host."""
    t = {"compute": f["est_compute_ms"] / theta["eff_compute"], "memory": f["est_memory_ms"] / theta["eff_memory"],
         "per-kernel": f["kernel_count"] * theta["gpu_s_per_kernel"] * 1e3,
         "launch": f["kernel_count"] * theta["host_s_per_kernel"] * 1e3, "host": theta["host_s_per_step"] * 1e3}
    t["step"] = max(t["compute"] + t["memory"] + t["per-kernel"], t["launch"]) + t["host"]
    return t


def pair_table(by):
    print("| job | GPU pair A / B | batches | measured ratio | predicted ratio | median ratio error | "
          "error at the smallest / largest batch |")
    print("|---|---|---|---|---|---|---|")
    for job in JOBS:
        for i in range(len(GPUS)):
            for j in range(i + 1, len(GPUS)):
                a, b = GPUS[i], GPUS[j]
                meas, pred, err = [], [], []
                for (jb, _), g in sorted(by.items()):
                    if jb != job or a not in g or b not in g:
                        continue
                    m = g[a][0] / g[b][0]
                    p = g[a][1] / g[b][1]
                    meas.append(m)
                    pred.append(p)
                    err.append(abs(p / m - 1))
                if meas:
                    print(f"| {job} | {a} / {b} | {len(meas)} | {statistics.median(meas):.3f} | "
                          f"{statistics.median(pred):.3f} | {100 * statistics.median(err):.1f}% | "
                          f"{100 * err[0]:.1f}% / {100 * err[-1]:.1f}% |")


def factor_table(by):
    print("| job | " + " | ".join(GPUS) + " |")
    print("|---|" + "---|" * len(GPUS))
    for job in JOBS:
        rows, rhs = [], []
        for (jb, _), g in sorted(by.items()):
            if jb != job:
                continue
            for i in range(len(GPUS)):
                for j in range(i + 1, len(GPUS)):
                    a, b = GPUS[i], GPUS[j]
                    if a in g and b in g:
                        x = [0.0] * len(GPUS)
                        x[i], x[j] = 1.0, -1.0
                        rows.append(x)
                        rhs.append(math.log((g[a][0] / g[b][0]) / (g[a][1] / g[b][1])))
        rows.append([1.0] * len(GPUS))  # the scale the ratios do not fix: mean log factor 0
        rhs.append(0.0)
        r = lstsq(rows, rhs)
        print(f"| {job} | " + " | ".join(f"{math.exp(v):.3f}" for v in r) + " |")


def power_at_top_cap(data):
    """Per GPU: the highest power limit of ResNet-50's and BERT-base/SQuAD's runs and the range of the average
    power measured at it (summary_power_*.csv); evaluate compares the runs at that cap."""
    out = {}
    for suffix, gpu in zip(SUFFIXES, GPUS):
        best = {}
        with open(os.path.join(data, "zeus", f"summary_power_{suffix}.csv")) as f:
            for r in csv.DictReader(f):
                if (r["dataset"], r["network"]) not in (("imagenet", "resnet50"), ("squad", "bert_base_uncased")):
                    continue
                k = (r["network"], r["batch_size"])
                if k not in best or float(r["power_limit"]) > best[k][0]:
                    best[k] = (float(r["power_limit"]), float(r["average_power"]))
        out[gpu] = (max(v[0] for v in best.values()), min(v[1] for v in best.values()),
                    max(v[1] for v in best.values()))
    return out


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    gpucast = argv[1]
    rest = argv[2:]
    tmp = tempfile.mkdtemp()
    data = os.environ.get("GPUCAST_DATA", os.path.join(ROOT, "..", "shared", "data"))
    if len(rest) >= 2:
        ev_path, pred_path = rest[0], rest[1]
    else:
        rows = ["--data", f"{data}/lucid/single_data.csv", "--data", f"{data}/migprofiler-a100/bert_train.csv"]
        ev_path, pred_path = os.path.join(tmp, "ev.json"), os.path.join(tmp, "p.json")
        with open(ev_path, "w") as f:
            f.write(run([gpucast, "evaluate", *rows, "--steps", f"{data}/zeus", "--algo", "physics", "--json",
                         "--quiet"]))
        run([gpucast, "train", *rows, "--algo", "physics", "--out", pred_path, "--quiet"])
    ev = json.load(open(ev_path))["steps"][0]
    theta = json.load(open(pred_path))["regressor"]["theta"]

    # (job, batch) -> gpu -> (measured epoch s, predicted step ms)
    by = {}
    for r in ev["runs"]:
        if r["source"] != "zeus" or r["job"] not in JOBS:
            continue
        by.setdefault((r["job"], r["batch"]), {})[r["gpu"]] = (r["epoch_s"], r["predicted_step_ms"])
    # The terms of every predicted step, with the attributes evaluate gives the Zeus jobs (ZeusAttrs()).
    comp = {(job, gpu, b): terms(features(gpucast, pred_path, job, gpu, b, ZEUS_ATTRS), theta)
            for (job, b), g in by.items() for gpu in g}
    for (job, b), g in by.items():
        for gpu, (_, ms) in g.items():
            if abs(comp[(job, gpu, b)]["step"] / ms - 1) > 1e-6:
                sys.exit(f"{job} {gpu} batch {b}: the terms add to {comp[(job, gpu, b)]['step']} ms, "
                         f"evaluate predicted {ms} ms: the breakdown does not hold for this model")

    print("Per job and GPU pair: median over the batches both GPUs ran of the step-time ratio A / B "
          "(measured: epoch times; predicted: step times) and of |predicted / measured - 1|")
    print()
    pair_table(by)
    print()
    print("Per job, each GPU's step relative to the model's, from the ratios alone (least squares over every batch "
          "and pair of log(measured ratio / predicted ratio) = r_A - r_B, geometric mean of the GPUs' factors 1): "
          "exp(r) above 1 means the GPU is slower than the model predicts relative to the other three")
    print()
    factor_table(by)
    print()
    print("What if the A40 ran without TF32 (tf32=0; PyTorch 1.10.1's default is TF32 on): the A40's predicted "
          "steps from the same terms, the other GPUs unchanged")
    print()
    what_if = {k: {gpu: (v[0], terms(features(gpucast, pred_path, k[0], gpu, k[1], ["tf32=0", "loader_workers=0"]),
                                     theta)["step"] if gpu == "A40" else v[1])
                   for gpu, v in g.items()} for k, g in by.items()}
    factor_table(what_if)
    print()
    print("Average power (W) measured at each GPU's highest cap (the runs compared), ResNet-50 and BERT-base/SQuAD, "
          "every batch: " + "; ".join(f"{g} {lo:.0f}-{hi:.0f} of {cap:.0f}"
                                     for g, (cap, lo, hi) in power_at_top_cap(data).items()))
    print()
    print(f"ResNet-50 in absolute terms, IF an epoch is ILSVRC2012's {IMAGENET_TRAIN:,} training images (the trace "
          "does not say; an assumption for this check only): images/s at batch 128 (every GPU ran it) and the "
          "predicted step over the step the epoch time implies, median over batches 32 and up")
    print()
    print("| GPU | measured images/s, batch 128 | predicted images/s, batch 128 | predicted / measured step |")
    print("|---|---|---|---|")
    for gpu in GPUS:
        g128 = by.get(("ResNet-50/ImageNet", 128), {}).get(gpu)
        q = [g[gpu][1] / (1e3 * g[gpu][0] / (IMAGENET_TRAIN / b)) for (jb, b), g in sorted(by.items())
             if jb == "ResNet-50/ImageNet" and b >= 32 and gpu in g]
        if g128 and q:
            print(f"| {gpu} | {IMAGENET_TRAIN / g128[0]:.0f} | {128e3 / g128[1]:.0f} | {statistics.median(q):.2f} |")
    print()
    print("Per job, GPU and batch: measured epoch (s), predicted step (ms) and its terms (ms) with the fitted "
          f"constants (eff_compute {theta['eff_compute']:.3f}, eff_memory {theta['eff_memory']:.3f}, "
          f"gpu_s_per_kernel {1e6 * theta['gpu_s_per_kernel']:.1f} us, host_s_per_kernel "
          f"{1e6 * theta['host_s_per_kernel']:.1f} us, host_s_per_step {1e3 * theta['host_s_per_step']:.2f} ms); "
          "binds: the largest GPU term, or the launches when they exceed the GPU time")
    print()
    print("| job | GPU | batch | epoch measured (s) | step predicted (ms) | compute | memory | per-kernel GPU | "
          "launch (host) | per-step host | binds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for job in JOBS:
        for gpu in GPUS:
            for (jb, batch), g in sorted(by.items()):
                if jb != job or gpu not in g:
                    continue
                t = comp[(job, gpu, batch)]
                binds = max(["compute", "memory", "per-kernel"], key=lambda k: t[k])
                if t["launch"] > t["compute"] + t["memory"] + t["per-kernel"]:
                    binds = "launch"
                print(f"| {job} | {gpu} | {batch} | {g[gpu][0]:.0f} | {g[gpu][1]:.1f} | {t['compute']:.1f} | "
                      f"{t['memory']:.1f} | {t['per-kernel']:.1f} | {t['launch']:.1f} | {t['host']:.1f} | {binds} |")


if __name__ == "__main__":
    main(sys.argv)
