#!/usr/bin/env python3
"""Markdown tables of docs/simulator.md from a tools/sweep.sh output directory.

Usage: tools/sweep_tables.py OUT_DIR COMMIT SEEDS
Reads every OUT_DIR/**/summary.json (one per gpucast simulate run); the first directory level names the
configuration (philly, accuracy, alibaba-26, gavel-32).
"""
import glob, json, math, os, sys

out, commit, seeds = sys.argv[1], sys.argv[2], sys.argv[3]
ORDER = ["slot", "profiling", "profiling-pool", "profiling-exclusive", "profiling-interference-aware", "predictive",
         "predictive-spread", "interference-aware", "predictive-feedback", "predictive-hybrid"]
PROFILING = ["profiling", "profiling-pool", "profiling-exclusive", "profiling-interference-aware"]
GPUCAST = ["predictive", "predictive-spread", "interference-aware", "predictive-feedback", "predictive-hybrid"]

runs = []  # every summary, tagged with its configuration directory (philly, accuracy, alibaba-26, ...)
for path in sorted(glob.glob(os.path.join(out, "**", "summary.json"), recursive=True)):
    rel = os.path.relpath(path, out).split(os.sep)
    r = json.load(open(path))
    # accuracy-nested/ (sweep.sh: --predictions auto) is a row of the value of accuracy, kept in its
    # own directory so that `gpucast report OUT/accuracy` does not take it for the default predictions
    r["config"] = "accuracy" if rel[0] == "accuracy-nested" else rel[0]
    runs.append(r)


def source(r):
    p = r["predictions"]
    return "unused" if p == "unused" else p


def select(config, load=None, policy=None, pred=None):
    """{seed: summary} of one configuration, load, policy and prediction source."""
    got = {}
    for r in runs:
        if r["config"] != config or (load is not None and abs(r["load_scale"] - load) > 1e-9):
            continue
        if policy is not None and r["policy"] != policy:
            continue
        if pred is not None and source(r) != pred:
            continue
        got[r["seed"]] = r
    return got


def ms(vals):
    m = sum(vals) / len(vals)
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
    return m, sd


def pm(vals, scale=1.0, prec=1):
    if not vals:
        return "—"
    m, sd = ms([v / scale for v in vals])
    return f"{m:.{prec}f} ± {sd:.{prec}f}"


def col(g, k):
    return [g[s][k] for s in sorted(g) if g[s].get(k) is not None]


def paired(a, b, k, invert=False):
    """Per-seed ratio a/b - 1 (percent), mean ± sd."""
    if not a or not b:
        return "—"
    v = [100 * (a[s][k] / b[s][k] - 1) for s in sorted(a) if s in b and b[s][k]]
    if not v:
        return "—"
    m, sd = ms(v)
    return f"{m:+.1f}% ± {sd:.1f}"


def variants(config, load):
    """[(label, {seed: run})] in table order: default predictions, then oracle."""
    out_ = []
    for p in ORDER:
        # the default-prediction runs of this policy (not oracle; the accuracy controls are another config)
        g = {}
        for r in runs:
            if r["config"] == config and abs(r["load_scale"] - load) < 1e-9 and r["policy"] == p \
                    and source(r) != "oracle":
                g[r["seed"]] = r
        if g:
            out_.append((p, g))
    for p in GPUCAST:
        g = select(config, load, p, "oracle")
        if g:
            out_.append((p + " (oracle)", g))
    return out_


def best_profiling(config, load, key, lowest):
    """Per seed, the best profiling variant's value of `key` (max or min), and its name by mean."""
    cands = {p: select(config, load, p) for p in PROFILING}
    cands = {p: g for p, g in cands.items() if g}
    if not cands:
        return None, None
    means = {p: ms(col(g, key))[0] for p, g in cands.items()}
    name = min(means, key=means.get) if lowest else max(means, key=means.get)
    return name, cands[name]


def loads_of(config):
    return sorted({r["load_scale"] for r in runs if r["config"] == config})


print(f"Runs of tools/sweep.sh at commit {commit}, seeds {seeds} (mean ± sd over seeds).")

# 1. Per configuration and load point: every policy.
for config in ["philly", "alibaba-26", "gavel-32"]:
    for load in loads_of(config):
        vs = variants(config, load)
        if not vs:
            continue
        slot = dict(vs).get("slot")
        if not slot:  # an interrupted sweep: this load point has no slot runs yet
            continue
        any_run = next(iter(slot.values()))
        cap = sum(1 for r in slot.values() if r["bound_kind"] == "capacity")
        print(f"\n**{any_run['trace']}, {any_run['cluster']} ({any_run['num_gpus']} GPUs), load ×{load:g}: "
              f"window {pm(col(slot, 'window_s'), 86400)} d of {pm(col(slot, 'trace_window_s'), 86400)} d, "
              f"{cap}/{len(slot)} seeds capacity-bound, ideal bound {pm(col(slot, 'ideal_work_utilization'))}%, "
              f"demand/capacity {pm(col(slot, 'load_factor'), 1, 2)}**\n")
        bw_name, bw = best_profiling(config, load, "useful_work_utilization", False)
        bj_name, bj = best_profiling(config, load, "jct_mean_s", True)
        if bw:
            # Headroom: how much more useful work than the best baseline any policy could do (the ideal
            # bound over it), and the verdict of the best gpucast policy (default predictions) against it.
            head = [slot[s]["ideal_work_utilization"] / bw[s]["useful_work_utilization"] * 100 - 100
                    for s in sorted(slot) if s in bw]
            best_g, best_m = None, -1.0
            for p in GPUCAST:
                g = dict(vs).get(p)
                if g and ms(col(g, "useful_work_utilization"))[0] > best_m:
                    best_g, best_m = p, ms(col(g, "useful_work_utilization"))[0]
            if best_g:
                g = dict(vs)[best_g]
                wins = sum(1 for s in g if s in bw and g[s]["useful_work_utilization"] >= bw[s]["useful_work_utilization"])
                print(f"Verdict: the best gpucast policy here, {best_g}, does {paired(g, bw, 'useful_work_utilization')} "
                      f"useful work against {bw_name} ({wins}/{len(g)} seeds at least as much) and "
                      f"{paired(g, bj, 'jct_mean_s')} mean JCT against {bj_name}; headroom (ideal bound over "
                      f"{bw_name}): {pm(head)}%.\n")
        print(f"| policy | useful work % | vs best profiling ({bw_name}) | mean JCT (h) | vs best profiling "
              f"({bj_name}) | p95 JCT (h) | mean slowdown | OOMs | OOM GPU-h | migrations | lost GPU-h | "
              f"prediction MAE |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, g in vs:
            mae = "—" if g[min(g)]["prediction_mae"] is None or name.endswith("(oracle)") \
                else f"{ms(col(g, 'prediction_mae'))[0]:.1f}"
            print(f"| {name} | {pm(col(g, 'useful_work_utilization'))} | {paired(g, bw, 'useful_work_utilization')} "
                  f"| {pm(col(g, 'jct_mean_s'), 3600)} | {paired(g, bj, 'jct_mean_s')} "
                  f"| {pm(col(g, 'jct_p95_s'), 3600)} | {pm(col(g, 'mean_slowdown'), 1, 0)} "
                  f"| {ms(col(g, 'oom_events'))[0]:.0f} | {ms(col(g, 'oom_lost_gpu_h'))[0]:.1f} "
                  f"| {ms(col(g, 'migrations'))[0]:.0f} | {ms(col(g, 'lost_progress_s'))[0] / 3600:.0f} | {mae} |")

# 2. Where gpucast's policies beat the best profiling baseline (Philly).
ls = loads_of("philly")
if ls:
    print("\n**Philly, 256 GPUs: each gpucast policy (default predictions) against the best profiling baseline "
          "at each load (paired per seed, mean ± sd): useful work gain / mean JCT change**\n")
    print("| policy | " + " | ".join(f"load ×{l:g}" for l in ls) + " |")
    print("|---|" + "---:|" * len(ls))
    for p in GPUCAST + [q + " (oracle)" for q in GPUCAST]:
        cells = []
        for l in ls:
            g = dict(variants("philly", l)).get(p)
            _, bw = best_profiling("philly", l, "useful_work_utilization", False)
            _, bj = best_profiling("philly", l, "jct_mean_s", True)
            cells.append("—" if not g else f"{paired(g, bw, 'useful_work_utilization')} / "
                                            f"{paired(g, bj, 'jct_mean_s')}")
        print(f"| {p} | " + " | ".join(cells) + " |")
    print("\nBest profiling baseline per load (by useful work; by mean JCT): " + "; ".join(
        f"×{l:g}: {best_profiling('philly', l, 'useful_work_utilization', False)[0]}, "
        f"{best_profiling('philly', l, 'jct_mean_s', True)[0]}" for l in ls))

# 3. The value of accuracy at load 2.
acc = [r for r in runs if r["config"] == "accuracy"]
if acc:
    def order(src):  # noisy by SD, then constant, then shuffled
        kind, _, val = src.partition(":")
        try:
            return ({"noisy": 0, "constant": 1}.get(kind, 2), float(val))
        except ValueError:
            return (2, 0.0)
    srcs = sorted({source(r) for r in acc}, key=order)
    rows = [("oracle", "philly", "oracle")] + [(s, "accuracy", s) for s in srcs]
    default = next((source(r) for r in runs if r["config"] == "philly" and source(r).startswith("lowo:")), None)
    if default:
        rows.append((default + " (default)", "philly", default))
    print("\n**Value of accuracy: Philly, 256 GPUs, load ×2 (mean ± sd over seeds)**\n")
    print("| predictions | MAE (points) | " + " | ".join(
        f"{p} useful % | {p} mean JCT (h)" for p in GPUCAST) + " |")
    print("|---|---:|" + "---:|---:|" * len(GPUCAST))
    fit = {p: [] for p in GPUCAST}
    for label, config, src in rows:
        cells, mae = [], None
        for p in GPUCAST:
            g = select(config, 2.0, p, src)
            if not g:
                cells += ["—", "—"]
                continue
            if mae is None:
                mae = 0.0 if src == "oracle" else ms(col(g, "prediction_mae"))[0]
            cells += [pm(col(g, "useful_work_utilization")), pm(col(g, "jct_mean_s"), 3600)]
            if src.startswith("noisy:") or src == "oracle":
                for s, r in g.items():
                    fit[p].append((0.0 if src == "oracle" else r["prediction_mae"], r["useful_work_utilization"],
                                   r["jct_mean_s"] / 3600))
        print(f"| {label} | {'—' if mae is None else f'{mae:.1f}'} | " + " | ".join(cells) + " |")
    print("\nCost of one point of prediction MAE (least-squares slope over the oracle and noisy runs, per seed): ")
    print("\n| policy | useful work (points per MAE point) | mean JCT (h per MAE point) | runs |")
    print("|---|---:|---:|---:|")
    for p in GPUCAST:
        pts = fit[p]
        if len(pts) < 3:
            continue
        x = [a for a, _, _ in pts]
        mx = sum(x) / len(x)
        sxx = sum((a - mx) ** 2 for a in x)
        if sxx == 0:
            continue
        def slope(idx):
            y = [t[idx] for t in pts]
            my = sum(y) / len(y)
            return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx
        print(f"| {p} | {slope(1):+.3f} | {slope(2):+.2f} | {len(pts)} |")

# 4. The acceptance checks of issue 18, per seed, at Philly load 2.
if 2.0 in ls:
    print("\n**Acceptance checks, Philly, 256 GPUs, load ×2, per seed**\n")
    print("| seed | bound (slot) | slot useful % | predictive JCT (h): oracle < noisy:15 < noisy:30 | "
          "default vs constant:50 (predictive): JCT h, useful % | profiling vs profiling-exclusive JCT (h) | "
          "oracle predictive OOMs |")
    print("|---:|---|---:|---|---|---|---:|")
    slot = select("philly", 2.0, "slot")
    default = next((source(r) for r in runs if r["config"] == "philly" and source(r).startswith("lowo:")), None)
    for s in sorted(slot):
        def get(config, policy, src, k):
            g = select(config, 2.0, policy, src)
            return g[s][k] if s in g else float("nan")
        jo, j15, j30 = (get("philly", "predictive", "oracle", "jct_mean_s") / 3600,
                        get("accuracy", "predictive", "noisy:15", "jct_mean_s") / 3600,
                        get("accuracy", "predictive", "noisy:30", "jct_mean_s") / 3600)
        dj, du = get("philly", "predictive", default, "jct_mean_s") / 3600, get("philly", "predictive", default,
                                                                                  "useful_work_utilization")
        cj, cu = get("accuracy", "predictive", "constant:50", "jct_mean_s") / 3600, get(
            "accuracy", "predictive", "constant:50", "useful_work_utilization")
        pj = select("philly", 2.0, "profiling")[s]["jct_mean_s"] / 3600
        ej = select("philly", 2.0, "profiling-exclusive")[s]["jct_mean_s"] / 3600
        oo = get("philly", "predictive", "oracle", "oom_events")
        print(f"| {s} | {slot[s]['bound_kind']} | {slot[s]['useful_work_utilization']:.2f} "
              f"| {jo:.1f} < {j15:.1f} < {j30:.1f}: {'yes' if jo < j15 < j30 else 'NO'} "
              + (f"| {dj:.1f} vs {cj:.1f}, {du:.2f} vs {cu:.2f}: {'yes' if dj <= cj and du >= cu else 'NO'} "
                 if cj == cj else "| — (no constant:50 runs) ") +
              f"| {pj:.1f} vs {ej:.1f}: {'yes' if pj <= ej else 'NO'} | {oo:.0f} |")

# 4b. The noise ordering under each cap rule (OUT/capacity-cap/: predictive with --cap-rule capacity).
cc = [r for r in runs if r["config"] == "capacity-cap"]
if cc:
    print("\n**Mean JCT (h) over the prediction noise, Philly, 256 GPUs, load ×2, per seed: oracle, noisy:15, "
          "noisy:30 (ordered: oracle < noisy:15 < noisy:30)**\n")
    seeds_ = sorted({r["seed"] for r in cc})
    print("| policy (admission) | " + " | ".join(f"seed {s}" for s in seeds_) + " | useful work % (mean) |")
    print("|---|" + "---|" * len(seeds_) + "---|")
    lines = [("predictive (paper's cap: sum <= 100)", [("philly", "oracle"), ("accuracy", "noisy:15"),
                                                       ("accuracy", "noisy:30")], "predictive"),
             (f"predictive (capacity cap: sum <= {cc[0].get('cap', 0):g}), draw 0 of the noise",
              [("capacity-cap", "oracle"), ("capacity-cap", "noisy:15"), ("capacity-cap", "noisy:30")], "predictive"),
             ("interference-aware (every physics rate >= 0.75)", [("philly", "oracle"), ("accuracy", "noisy:15"),
                                                                  ("accuracy", "noisy:30")], "interference-aware")]
    for label, srcs, p in lines:
        gs = [select(c, 2.0, p, src) for c, src in srcs]
        if not all(gs):
            continue
        cells = []
        for s in seeds_:
            if not all(s in g for g in gs):
                cells.append("—")
                continue
            a, b, c = (g[s]["jct_mean_s"] / 3600 for g in gs)
            cells.append(f"{a:.1f}, {b:.1f}, {c:.1f}: {'yes' if a < b < c else 'NO'}")
        uw = ", ".join(f"{ms(col(g, 'useful_work_utilization'))[0]:.1f}" for g in gs)
        print(f"| {label} | " + " | ".join(cells) + f" | {uw} |")
    # The capacity cap's noise levels as the check measures them: the mean over the draws of the
    # noise (noisy:SD and noisy:SD@K, tools/sim_done_when.sh), ± its standard error.
    o_ = select("capacity-cap", 2.0, "predictive", "oracle")
    dr = {sd: {} for sd in (15, 30)}
    for r in cc:
        for sd in dr:
            if r["policy"] == "predictive" and (source(r) == f"noisy:{sd}" or source(r).startswith(f"noisy:{sd}@")):
                dr[sd].setdefault(r["seed"], []).append(r)
    n_ = min((len(v) for d in dr.values() for v in d.values()), default=0)
    if o_ and n_ > 1:
        cells = []
        for s in seeds_:
            if s not in o_ or not all(s in dr[sd] for sd in dr):
                cells.append("—")
                continue
            a = o_[s]["jct_mean_s"] / 3600
            (b, bs), (c, cs) = (ms([r["jct_mean_s"] / 3600 for r in dr[sd][s]]) for sd in (15, 30))
            b_se, c_se = bs / len(dr[15][s]) ** 0.5, cs / len(dr[30][s]) ** 0.5
            cells.append(f"{a:.1f}, {b:.1f} ± {b_se:.1f}, {c:.1f} ± {c_se:.1f}: {'yes' if a < b < c else 'NO'}")
        uw = ", ".join(f"{x:.1f}" for x in [ms(col(o_, 'useful_work_utilization'))[0]] +
                       [ms([r["useful_work_utilization"] for v in dr[sd].values() for r in v])[0] for sd in (15, 30)])
        print(f"| predictive (capacity cap), each noise level the mean over its {n_} draws ± se | " +
              " | ".join(cells) + f" | {uw} |")

# 5. The restart cost: profiling-exclusive with --restart-s (OUT/restart/) against the default (0 s).
rs = [r for r in runs if r["config"] == "restart"]
if rs:
    print("\n**Restart cost: Philly, 256 GPUs, load ×2, per seed (useful work %, mean JCT h)**\n")
    print("| policy | --restart-s | restarts | " + " | ".join(f"seed {s}" for s in sorted({r['seed'] for r in rs})) +
          " | useful work change (points) | cost in the run (points) |")
    print("|---|---:|---:|" + "---|" * len({r['seed'] for r in rs}) + "---:|---:|")
    for p in sorted({r["policy"] for r in rs}):
        g = {r["seed"]: r for r in rs if r["policy"] == p}
        base = select("philly", 2.0, p)
        cells = [f"{g[s]['useful_work_utilization']:.2f} vs {base[s]['useful_work_utilization']:.2f}, "
                 f"{g[s]['jct_mean_s'] / 3600:.1f} vs {base[s]['jct_mean_s'] / 3600:.1f}" if s in base else "—"
                 for s in sorted(g)]
        d = [base[s]["useful_work_utilization"] - g[s]["useful_work_utilization"] for s in sorted(g) if s in base]
        # The cost in the run itself (restart_work_utilization: the useful work its restarts took
        # from the window); the change between the two runs adds the rearranged schedule's chaos.
        print(f"| {p} | {g[min(g)].get('restart_s', '?'):g} | {ms(col(g, 'restarts'))[0]:.0f} | " + " | ".join(cells) +
              f" | {pm(d, 1, 2)} | {pm(col(g, 'restart_work_utilization'), 1, 3)} |")

# 6. Recurring jobs: --recurring F (OUT/recurring/F-*/) against the best profiling baselines.
rec = [r for r in runs if r["config"] == "recurring"]
if rec:
    _, bw = best_profiling("philly", 2.0, "useful_work_utilization", False)
    bwn, _ = best_profiling("philly", 2.0, "useful_work_utilization", False)
    bjn, bj = best_profiling("philly", 2.0, "jct_mean_s", True)
    fs = sorted({r["recurring"] for r in rec})
    pols = [p for p in GPUCAST if any(r["policy"] == p for r in rec)]
    print(f"\n**Recurring jobs: Philly, 256 GPUs, load ×2: useful work vs {bwn} / mean JCT vs {bjn} "
          "(paired per seed, mean ± sd) at each share F of jobs whose graph ran before**\n")
    print("| F | " + " | ".join(pols) + " |")
    print("|---:|" + "---|" * len(pols))
    for f in [0.0] + fs:
        cells = []
        for p in pols:
            g = {r["seed"]: r for r in rec if r["policy"] == p and abs(r["recurring"] - f) < 1e-12}
            if f == 0.0:
                g = select("philly", 2.0, p)
                g = {k: v for k, v in g.items() if source(v) != "oracle"}
            wins = sum(1 for k in g if k in bw and g[k]["useful_work_utilization"] >= bw[k]["useful_work_utilization"])
            cells.append("—" if not g else f"{paired(g, bw, 'useful_work_utilization')} ({wins}/{len(g)}) / "
                                           f"{paired(g, bj, 'jct_mean_s')}")
        print(f"| {f:g} | " + " | ".join(cells) + " |")

# The interference model's validation: the tables gpucast interference --validate prints.
iv = os.path.join(out, "interference.json")
if os.path.exists(iv):
    v = json.load(open(iv))
    if "markdown" in v:
        print(f"\n**Interference model (RTX 3090): {v['params']['form']}**\n")
        print(v["markdown"])
