#!/usr/bin/env python3
"""Widths of nested conformal windows (ShortestWindow, src/predict/predictor.cc) against the former
hull construction, on the calibration scores of model files and on seeded random samples.
Usage: window_widths.py [MODEL.json ...]   (e.g. a file of `gpucast train ... -o MODEL.json`)

Each construction maps sorted scores and a level to a window holding k = ceil((n+1) level) scores
(clamped to [1, n]); every one but `free` nests across levels. Printed: the width at 0.8 and the
mean width over the levels 0.50, 0.55, ..., 0.95, each as a ratio to the hull's, averaged per
source (real: every distinct score vector of the model files with >= 5 scores; utilization,
step, and the transfer scores per GPU type).
  hull   the hull of the shortest windows of 1..k scores (the construction before nest16)
  grow   from the shortest 2-window, adding the nearer neighbouring score
  peel   from all n scores, dropping the end whose removal shortens the window more
  chain  the shipped one: through the shortest 0.8-window and the shortest 0.5-window inside it
  dp     the narrowest nested chain for the mean over 0.50-0.95 (dynamic programme, O(n^2)): a bound
  free   the shortest window of k scores, not nested: a lower bound at every level
Stdlib only; the C++ is the reference, this mirrors it for the comparison."""
import json
import math
import random
import sys

LEVELS = [0.5 + 0.05 * i for i in range(10)]


def kof(n, level):
    return int(min(max(math.ceil((n + 1) * level), 1), n))


def shortest(x, m, first=0, last=None):  # start of the shortest m-window in x[first..last]
    last = len(x) - 1 if last is None else last
    best = first
    for i in range(first + 1, last - m + 2):
        if x[i + m - 1] - x[i] < x[best + m - 1] - x[best]:
            best = i
    return best


def peel_to(x, lo, hi, k):
    while hi - lo + 1 > k:
        if x[lo + 1] - x[lo] > x[hi] - x[hi - 1]:
            lo += 1
        else:
            hi -= 1
    return lo, hi


def grow_to(x, lo, hi, k, first, last):
    while hi - lo + 1 < k:
        if hi == last or (lo > first and x[lo] - x[lo - 1] <= x[hi + 1] - x[hi]):
            lo -= 1
        else:
            hi += 1
    return lo, hi


def hull(x, level):
    k = kof(len(x), level)
    b = shortest(x, min(2, len(x)))
    lo = hi = x[b]
    for m in range(2, k + 1):
        b = shortest(x, m)
        lo, hi = min(lo, x[b]), max(hi, x[b + m - 1])
    return lo, hi


def grow(x, level):
    n, k = len(x), kof(len(x), level)
    if n == 1:
        return x[0], x[0]
    lo = shortest(x, 2)
    lo, hi = peel_to(x, lo, lo + 1, k)
    lo, hi = grow_to(x, lo, hi, k, 0, n - 1)
    return x[lo], x[hi]


def peel(x, level):
    lo, hi = peel_to(x, 0, len(x) - 1, kof(len(x), level))
    return x[lo], x[hi]


def chain(x, level):
    n, k = len(x), kof(len(x), level)
    m_high, m_low = kof(n, 0.8), kof(n, 0.5)
    top = shortest(x, m_high)
    lo, hi, first, last = top, top + m_high - 1, 0, n - 1
    if k < m_high:
        lo = shortest(x, m_low, top, top + m_high - 1)
        hi, first, last = lo + m_low - 1, top, top + m_high - 1
    lo, hi = peel_to(x, lo, hi, k)
    lo, hi = grow_to(x, lo, hi, k, first, last)
    return x[lo], x[hi]


def free(x, level):
    k = kof(len(x), level)
    b = shortest(x, k)
    return x[b], x[b + k - 1]


def dp_windows(x):  # the nested chain of least summed width over LEVELS, one window per size
    n = len(x)
    weight = {}
    for level in LEVELS:
        weight[kof(n, level)] = weight.get(kof(n, level), 0) + 1
    cost, drop_low = [0.0] * n, {}
    for m in range(2, n + 1):
        nxt = []
        for lo in range(n - m + 1):
            drop_low[lo, m] = cost[lo + 1] < cost[lo]
            nxt.append(min(cost[lo], cost[lo + 1]) + weight.get(m, 0) * (x[lo + m - 1] - x[lo]))
        cost = nxt
    out, lo = {}, 0
    for m in range(n, 0, -1):
        out[m] = (x[lo], x[lo + m - 1])
        if m > 1 and drop_low[lo, m]:
            lo += 1
    return lambda xs, level: out[kof(n, level)]


def check(x, f):  # nested over 0.05..0.99 and holding k scores
    prev = None
    for p in range(5, 100):
        lo, hi = f(x, p / 100)
        assert sum(lo <= v <= hi for v in x) >= kof(len(x), p / 100)
        assert prev is None or (lo <= prev[0] and hi >= prev[1])
        prev = (lo, hi)


def widths(x):
    out = {}
    for name, f in [("hull", hull), ("grow", grow), ("peel", peel), ("chain", chain), ("dp", dp_windows(x)),
                    ("free", free)]:
        if name != "free":
            check(x, f)
        w8 = f(x, 0.8)[1] - f(x, 0.8)[0]
        mean = sum(f(x, lv)[1] - f(x, lv)[0] for lv in LEVELS) / len(LEVELS)
        out[name] = (w8, mean)
    return out


def model_vectors(paths):
    seen = set()
    for path in paths:
        c = json.load(open(path))["calibration"]
        vecs = [c.get(key) or [] for key in ("scores", "band_scores", "plain_scores", "step_scores")]
        t, g = c.get("transfer_scores") or [], c.get("transfer_score_gpus") or []
        vecs += [[s for s, gg in zip(t, g) if gg == gpu] for gpu in sorted(set(g))] if g else [t]
        u = c.get("transfer_util_scores") or []
        vecs += [[e["score"] for e in u if e["gpu"] == gpu] for gpu in sorted({e["gpu"] for e in u})]
        for v in vecs:
            v = tuple(sorted(float(s) for s in v))
            if len(v) >= 5 and v not in seen:
                seen.add(v)
                yield list(v)


def main():
    rng = random.Random(1)
    draws = {
        "normal": lambda: rng.gauss(0, 1),
        "lognormal": lambda: math.exp(rng.gauss(0, 1)),
        "exp-1": lambda: rng.expovariate(1) - 1,
        "t2": lambda: rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1, 1)),
        "cauchy": lambda: math.tan(math.pi * (rng.random() - 0.5)),
        "40% zeros + t3": lambda: 0.0 if rng.random() < 0.4 else
        rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 1 / 1.5)),
    }
    sources = [("real", list(model_vectors(sys.argv[1:])))] if sys.argv[1:] else []
    for name, draw in draws.items():
        sources.append((name, [sorted(draw() for _ in range(n)) for n in (10, 20, 50, 200) for _ in range(15)]))
    names = ["hull", "grow", "peel", "chain", "dp", "free"]
    print("| scores | vectors | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for source, vecs in sources:
        ratio = {nm: [0.0, 0.0] for nm in names}
        for x in vecs:
            w = widths(x)
            for nm in names:
                for i in (0, 1):
                    ratio[nm][i] += w[nm][i] / w["hull"][i] if w["hull"][i] > 0 else 1
        cells = ["%.3f / %.3f" % (ratio[nm][0] / len(vecs), ratio[nm][1] / len(vecs)) for nm in names]
        print("| %s | %d | %s |" % (source, len(vecs), " | ".join(cells)))


if __name__ == "__main__":
    main()
