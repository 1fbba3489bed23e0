#!/usr/bin/python3
"""The other way to get gpucast's forward FLOPs: build the model in torch and count with torch.profiler.

usage: /usr/bin/python3 tools/torch_flops.py MODEL_NAME --batch N [--seq S] [--json]

MODEL_NAME: a torchvision name of tools/flops_ref.py (resnet18, resnet50, vgg16, mobilenet_v2,
alexnet, googlenet, inception_v3) or transformer6 (with --seq, default 128).
Prints {model, batch, flops, seconds, peak_rss_mb}: flops = forward conv+matmul FLOPs (2 per
multiply-add); seconds = wall time of building the model (random init) plus one profiled forward
pass, excluding the Python and torch import; peak_rss_mb = the process's peak resident memory.
"""
import argparse
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flops_ref as R  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("model", choices=sorted(R.TORCHVISION) + ["transformer6"])
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, default=128, help="sequence length (transformer6)")
    ap.add_argument("--json", action="store_true", help="print JSON (default: one text line)")
    a = ap.parse_args()
    if a.batch < 1 or a.seq < 1:
        ap.error("--batch and --seq must be >= 1")
    t0 = time.perf_counter()
    model = R.build(a.model)
    flops = R.profiler_flops(model, R.example_input(a.model, a.batch, a.seq))
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    r = {"model": a.model, "batch": a.batch, "flops": flops, "seconds": round(seconds, 4),
         "peak_rss_mb": round(rss, 1)}
    print(json.dumps(r) if a.json else
          f"{a.model} batch {a.batch}: {flops / 1e9:.3f} GFLOPs forward, {seconds:.3f} s, {rss:.0f} MB peak RSS")


if __name__ == "__main__":
    main()
