#!/usr/bin/env python3
"""A screen of other shapes of the GPU memory high end (docs/predictor.md, "The low end takes what
the high end leaves (mem13)"), outside gpucast, on the held-out rows of one lowo evaluation:

  $B evaluate --data ../shared/data/lucid/single_data.csv \\
      --data ../shared/data/migprofiler-a100/bert_train.csv --memory-only --split lowo --json > lowo.json
  tools/memory_interval_screen.py lowo.json

For each held-out workload the calibration is the other workloads' rows of that run (their own
held-out predictions, not refitted without the workload: a screen, not the nested evaluation).
The high end is point + q x scale + the widening (cuDNN's spread for convolutional jobs, the
estimated parts), q the workload-weighted 95% quantile of (measured - widening - point) / scale,
the new job at the mean weight (memory_model.cc, WeightedConformalQuantile); the low end is the
run's own. Scales: certain_weight x point + (1 - certain_weight) x a part of the point: the graph
(all but the context), the uncertain part (working set), kept activations alone, the static parts
(weights, gradients, optimizer state, data, workspaces, allocator), working set and static parts.
Printed: each scale fixed across the folds, then the same with a separate calibration for jobs with
and without convolutions (Mondrian): the fraction of rows whose high end holds, the median width /
point of all rows and of bert-base's."""
import json
import statistics
import sys

CONV_RERUN_MIB = 903  # kConvRerunMib (src/predict/memory_model.h)
STATIC = ["weights", "gradients", "optimizer", "autocast_weights", "data", "cublas_workspace",
          "allocator_rounding", "allocator_segments", "ddp_buckets", "zero_buffers"]
WEIGHTS = [0.5, 0.3, 0.2, 0.1, 0.05]  # CertainWeights below 1


def part(r, name):
    c = r["components_mib"]
    work = c["activations"] + c["transient"] + c["loss_head"] + c["optimizer_step"]
    static = sum(c[k] for k in STATIC)
    return {"graph": r["predicted_mib"] - c["context"], "uncertain": work, "activations": c["activations"],
            "static": static, "working+static": work + static}[name]


def widening(r):
    e = r["estimate"]
    return e["uncertain_mib"] + (CONV_RERUN_MIB if e["uses_conv"] else 0)


def scale(r, name, a):
    p = r["predicted_mib"]
    return p if name == "point" else a * p + (1 - a) * min(max(part(r, name), 0), p)


def quantile(scores, level=0.95):
    scores = sorted(scores)
    total = sum(w for _, w in scores)
    total += total / len(scores)
    cum = 0
    for s, w in scores:
        cum += w
        if cum >= level * total * (1 - 1e-12):
            return s
    return scores[-1][0]


def screen(rows, name, a, mondrian):
    out = []
    for r in rows:
        cal = [x for x in rows if x["workload"] != r["workload"] and
               (not mondrian or x["estimate"]["uses_conv"] == r["estimate"]["uses_conv"])]
        n = {}
        for x in cal:
            n[x["workload"]] = n.get(x["workload"], 0) + 1
        q = quantile([((max(x["measured_mib"] - widening(x), 1) - x["predicted_mib"]) / scale(x, name, a),
                       1 / n[x["workload"]]) for x in cal])
        high = r["predicted_mib"] + max(0.0, q * scale(r, name, a)) + widening(r)
        out.append(((high - r["low_mib"]) / r["predicted_mib"], high >= r["measured_mib"], r["workload"]))
    return out


def main():
    rows = json.load(open(sys.argv[1]))["evaluations"][0]["rows"]
    for r in rows:
        if r["workload"].startswith("VGG") and r["batch"] == 128 and r["measured_mib"] > 3500:
            print("VGG batch 128: measured - widening - point %.0f MiB, graph %.0f MiB" %
                  (r["measured_mib"] - widening(r) - r["predicted_mib"], part(r, "graph")))
    families = [("point", 1.0)] + [(p, a) for p in ["graph", "uncertain", "activations", "static",
                                                    "working+static"] for a in WEIGHTS]
    for mondrian in (False, True):
        print("\n%s\n| scale | certain weight | high end >= measured | median width / point | bert-base |"
              "\n|---|---|---|---|---|" % ("Mondrian by convolutions" if mondrian else "one calibration"))
        for name, a in families:
            res = screen(rows, name, a, mondrian)
            bb = [w for w, _, k in res if k.startswith("bert-base")]
            print("| %s | %.2f | %.3f | %.3f | %.3f |" % (name, a, sum(h for _, h, _ in res) / len(res),
                                                         statistics.median(w for w, _, _ in res),
                                                         statistics.median(bb)))


if __name__ == "__main__":
    main()
