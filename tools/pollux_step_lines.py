#!/usr/bin/env python3
"""Each Pollux job's one-GPU step time as a line in the batch, measured and predicted: the least-squares
slope (ms per sample) and intercept (ms at batch 0) of its runs, from the JSON of
`gpucast evaluate --steps pollux-t4 ... --json` (the first `steps` entry with one-GPU runs).
Usage: pollux_step_lines.py EVALUATE.json. The slope is the GPU's per-sample work (what the peak rates
and efficiencies set); the intercept the per-step work that does not grow with the batch. Stdlib only."""
import collections
import json
import sys


def line(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def main():
    ev = json.load(open(sys.argv[1]))["steps"]
    runs = collections.defaultdict(list)
    for e in ev:
        for r in e.get("runs", []):
            if r.get("source") == "pollux-t4" and r["gpus"] == 1:
                runs[r["job"]].append(r)
    print("| job | runs | slope predicted / measured | intercept predicted (ms) | intercept measured (ms) |")
    print("|---|---|---|---|---|")
    for job in sorted(runs):
        v = runs[job]
        b = [r["batch"] for r in v]
        sp, ip = line(b, [r["predicted_step_ms"] for r in v])
        sm, im = line(b, [r["step_ms"] for r in v])
        print("| %s | %d | %.2f | %.1f | %.1f |" % (job, len(v), sp / sm, ip, im))


if __name__ == "__main__":
    main()
