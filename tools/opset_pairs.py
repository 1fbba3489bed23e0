#!/usr/bin/env python3
"""One network exported at two opsets must predict alike (issue 37: memory within 2%).

usage: tools/opset_pairs.py --gpucast BIN --predictor MODEL.json [--dir DIR] [--opsets A B] [--only NAME ...]

For every architecture of models/unseen/reference.json whose files NAME-opsetA.onnx and
NAME-opsetB.onnx are both in DIR (default models/unseen; export others with
`/usr/bin/python3 tools/unseen_models.py --out DIR --opsets 13`), predicts each at the reference
batch and at 8x it (`gpucast predict --json`) and prints the kernels, step time, utilization and
GPU memory of both, with the memory's relative difference. Exit status 1 when a pair launches a
different number of kernels or differs in memory by more than 2%, 2 on a usage or input error.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEMORY_TOLERANCE = 0.02


def predict(gpucast, predictor, path, m, scale):
    args = [gpucast, "predict", "-p", predictor, "-m", path, "-b", str(m["batch"] * scale), "--json", "-q"]
    for k, v in m["dims"].items():
        args += ["--dim", f"{k}={v * scale if k in m['batch_dims'] else v}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{path}: gpucast predict exited {r.returncode}: {r.stderr.strip()}")
    d = json.loads(r.stdout)
    return {"kernels": int(d["features"]["kernel_count"]), "step_ms": d["step_ms"], "util": d["gpu_util"],
            "mem_mib": d["gpu_mem_mib"]}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpucast", required=True)
    ap.add_argument("--predictor", required=True)
    ap.add_argument("--dir", default=os.path.join(ROOT, "models", "unseen"))
    ap.add_argument("--opsets", nargs=2, type=int, default=[14, 17])
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args(argv)
    ref_path = os.path.join(ROOT, "models", "unseen", "reference.json")
    models = json.load(open(ref_path))["models"]
    unknown = sorted(set(a.only or []) - set(models))
    if unknown:
        print(f"opset_pairs: unknown architecture(s) {', '.join(unknown)} (known: {', '.join(sorted(models))})",
              file=sys.stderr)
        return 2
    lo, hi = a.opsets
    print(f"| architecture | batch | kernels (opset {lo} / {hi}) | step ms | utilization % | memory MiB | memory difference |")
    print("|---|---|---|---|---|---|---|")
    pairs, bad, missing = 0, [], []
    for name, m in models.items():
        if a.only and name not in a.only:
            continue
        files = [os.path.join(a.dir, f"{name}-opset{o}.onnx") for o in (lo, hi)]
        if not all(os.path.exists(f) for f in files):
            missing.append(name)
            continue
        for scale in (1, 8):
            p, q = (predict(a.gpucast, a.predictor, f, m, scale) for f in files)
            diff = p["mem_mib"] / q["mem_mib"] - 1
            pairs += 1
            if p["kernels"] != q["kernels"] or abs(diff) > MEMORY_TOLERANCE:
                bad.append(f"{name} x{scale}")
            print(f"| {name} | {m['batch'] * scale} | {p['kernels']} / {q['kernels']} | {p['step_ms']:.2f} / "
                  f"{q['step_ms']:.2f} | {p['util']:.1f} / {q['util']:.1f} | {p['mem_mib']:.0f} / {q['mem_mib']:.0f} "
                  f"| {100 * diff:+.2f}% |")
    print(f"\n{pairs} pairs compared; {len(bad)} differ (kernels, or memory beyond "
          f"{100 * MEMORY_TOLERANCE:.0f}%){': ' + ', '.join(bad) if bad else ''}"
          f"{'; no pair of files in ' + a.dir + ' for ' + ', '.join(missing) if missing else ''}")
    if pairs == 0:
        print(f"opset_pairs: no architecture has both opset {lo} and {hi} files in {a.dir}", file=sys.stderr)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
