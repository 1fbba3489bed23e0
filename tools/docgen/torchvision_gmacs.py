#!/usr/bin/env python3
"""docs/cost-rules.md's reference table: forward conv + matmul multiply-adds of the torchvision
exports (batch 1) against torchvision's published GMACs and torch.profiler, and the 6-layer
Transformer's FLOPs (batch 32, seq 128) against torch.profiler; references from
models/torchvision/reference_flops.json, gpucast's counts from `gpucast analyze --json`.

Usage: tools/docgen/torchvision_gmacs.py BUILD/gpucast
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def conv_matmul_flops(gpucast, model):
    args = [gpucast, "analyze", os.path.join(ROOT, "models", model["file"]), "--batch",
            str(model["batch"]), "--json"]
    for k, v in model.get("dims", {}).items():
        args += ["--dim", f"{k}={v}"]
    r = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return sum(n["forward_flops"] for n in r["nodes"] if n["category"] in ("convolution", "matmul"))


def main():
    gpucast = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "gpucast")
    ref = json.load(open(os.path.join(ROOT, "models", "torchvision", "reference_flops.json")))["models"]
    print("| model | gpucast GMACs | published | ratio | vs torch.profiler |")
    print("|---|---|---|---|---|")
    for name in sorted(k for k in ref if "published_gmacs" in ref[k]):
        m = ref[name]
        f = conv_matmul_flops(gpucast, m)
        print(f"| {name} | {f / 2e9:.4f} | {m['published_gmacs']:.2f} | "
              f"{f / 2e9 / m['published_gmacs']:.4f} | {f / m['profiler_flops']:.4f} |")
    m = ref["transformer6"]
    f = conv_matmul_flops(gpucast, m)
    dims = ", ".join(f"{k} {v}" for k, v in m.get("dims", {}).items())
    print(f"| transformer6 (FLOPs, batch {m['batch']}, {dims}) | {f:,} | profiler {m['profiler_flops']:,} "
          f"| {f / m['profiler_flops']:.5f} | |")


if __name__ == "__main__":
    main()
