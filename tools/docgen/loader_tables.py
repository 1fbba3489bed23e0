#!/usr/bin/env python3
"""docs/measure.md's two loader_probe tables, measured on this machine (a timing: CPU-load
dependent wall times, CPU times less so).

1. Generated JPEG folders (64 random-pixel images each, seed 0): an ImageNet-like 500 x 375 folder
   with the imagenet transform and a CIFAR-like 32 x 32 folder with the cifar transform.
2. The harness's own pipelines (`--workload`) beside what the Lucid rows allow: W = 2 loader
   workers deliver at most W x 1000 / loader_ms_per_sample samples/s, so a row that reached
   `speed` samples/s needed loader_ms_per_sample <= 2 x 1000 / speed (the largest speed of the
   workload's rows; its smallest speed too for a workload whose speed plateaus).

Usage: tools/docgen/loader_tables.py [--data DIR] [--seconds S]   (data: GPUCAST_DATA or ../shared/data)
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = [sys.executable, os.path.join(ROOT, "tools", "measure", "loader_probe.py")]


def probe(args):
    r = subprocess.run(PROBE + args + ["--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"loader_tables: loader_probe {' '.join(args)} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.environ.get("GPUCAST_DATA", os.path.join(ROOT, "..", "shared", "data")))
    ap.add_argument("--seconds", default="5")
    a = ap.parse_args()
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="gpucast-probe.") as t:
        print("| data | transform | loader_ms_per_sample (CPU) | wall ms per sample | delivered samples/s |")
        print("|---|---|---|---|---|")
        for name, (h, w), transform, desc in (
                ("500 x 375 JPEG", (375, 500), "imagenet", "imagenet (RandomResizedCrop 224, flip, normalise)"),
                ("32 x 32 JPEG", (32, 32), "cifar", "cifar (RandomCrop 32 pad 4, flip, normalise)")):
            d = os.path.join(t, transform)
            os.makedirs(d)
            for i in range(64):
                Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(f"{d}/{i:03d}.jpg")
            r = probe(["--image-folder", d, "--transform", transform, "--workers", "1", "--seconds", a.seconds])
            print(f"| {name} | {desc} | {r['loader_ms_per_sample']:.3g} | {r['wall_ms_per_sample']:.3g} | "
                  f"{r['samples_per_s']:.3g} |")
    speeds = {}
    with open(os.path.join(a.data, "lucid", "single_data.csv")) as f:
        for row in csv.DictReader(f):
            speeds.setdefault(row["model"], []).append(float(row["speed"]))
    print()
    print("| workload(s) | loader_ms_per_sample (CPU) | wall ms | Lucid rows (2 workers): speed samples/s, "
          "so loader_ms_per_sample at most |")
    print("|---|---|---|---|")
    # NeuMF's speed counts rows; one of its samples is 1 positive + 4 sampled negatives = 5 rows.
    for workloads, rows in ((["PointNet"], 1), (["VGG", "MobileNetV2", "EfficientNet"], 1), (["DCGAN"], 1),
                            (["NeuMF"], 5)):
        r = probe(["--workload", workloads[0], "--workers", "1", "--seconds", a.seconds])
        s = [x / rows for w in workloads for x in speeds[w]]
        print(f"| {', '.join(workloads)} | {r['loader_ms_per_sample']:.3g} | {r['wall_ms_per_sample']:.3g} | "
              f"{min(s):,.0f}-{max(s):,.0f}{' (rows / 5)' if rows > 1 else ''}: {2000 / max(s):.3g} at the "
              f"largest speed, {2000 / min(s):.3g} at the smallest |")


if __name__ == "__main__":
    main()
