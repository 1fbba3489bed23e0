#!/usr/bin/env python3
"""Peak against mean GPU memory in the Lucid data (docs/predictor.md, "GPU memory"):
single_data.csv's gmem is a job's MEAN nvidia-smi used memory alone; colocate_info.csv's gmem is the
PEAK used memory of two of those jobs run together. If a job's used memory is flat once it runs (the
caching allocator keeps what it reserved), the pair's peak is the sum of the two means; where it is
more, a job's peak in that run exceeded its mean in the single run.
Usage: tools/memory_peak_vs_mean.py [DATA_DIR]   (default ../shared/data)"""
import csv
import math
import sys
from collections import defaultdict

# Jobs with no convolution, batch norm or RNN (no cuDNN autotuning) and a tiny model: a pair's excess
# over the sum of means is the other job's.
TINY = {"PPO", "TD3", "NeuMF"}
CONV = {"DCGAN", "EfficientNet", "MobileNetV2", "VGG", "ResNet50"}  # 2-D convolutions (cuDNN autotuner)


def order_stat(sorted_values, level):
    """The ceil((n + 1) level)-th smallest (clamped), as the conformal bounds."""
    n = len(sorted_values)
    return sorted_values[min(max(math.ceil((n + 1) * level), 1), n) - 1]


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
    single = {}
    with open(f"{data}/lucid/single_data.csv") as f:
        for r in csv.DictReader(f):
            single[(r["model"], int(r["batchsize"]), int(r["amp"]))] = float(r["gmem"])
    ratios, by_workload, conv_excess = [], defaultdict(list), []
    with open(f"{data}/lucid/colocate_info.csv") as f:
        for r in csv.DictReader(f):
            k1 = (r["model1"], int(r["batchsize1"]), int(r["amp1"]))
            k2 = (r["model2"], int(r["batchsize2"]), int(r["amp2"]))
            if k1 not in single or k2 not in single:
                continue
            peak, means = float(r["gmem"]), single[k1] + single[k2]
            ratios.append(peak / means)
            for k in {k1[0], k2[0]}:
                by_workload[k].append(peak / means)
            for a, b in ((k1, k2), (k2, k1)):
                if b[0] in TINY and a[0] in CONV:
                    conv_excess.append(peak - means)
    ratios.sort()
    print(f"{len(ratios)} co-located pairs of measured single jobs (RTX 3090): peak of the pair / sum of the "
          "two jobs' means alone\n")
    print("| pairs with | pairs | p5 | p25 | median | p75 | p95 | max |")
    print("|---|---|---|---|---|---|---|---|")
    def row(name, v):
        v = sorted(v)
        q = lambda p: v[int(p * (len(v) - 1))]
        print(f"| {name} | {len(v)} | {q(.05):.3f} | {q(.25):.3f} | {q(.5):.3f} | {q(.75):.3f} | {q(.95):.3f} | "
              f"{v[-1]:.3f} |")
    row("any", ratios)
    for w in sorted(by_workload):
        row(w, by_workload[w])
    conv_excess.sort()
    print(f"\nA convolutional job beside a tiny one ({', '.join(sorted(TINY))}; {len(conv_excess)} pairs): the "
          "pair's peak minus the two means, MiB: median "
          f"{order_stat(conv_excess, 0.5):.0f}, 90% {order_stat(conv_excess, 0.9):.0f}, "
          f"95% {order_stat(conv_excess, 0.95):.0f}, max {conv_excess[-1]:.0f}")


if __name__ == "__main__":
    main()
