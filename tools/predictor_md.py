#!/usr/bin/env python3
"""Markdown tables of docs/predictor.md from the JSON of `gpucast evaluate`, `predict` and `gpus`
(tools/predictor_tables.sh runs them). Usage: predictor_md.py SECTION FILE... (gpus: JSON on stdin).
Stdlib only; every number printed is one the build computed (or a mean/RMSLE of its rows)."""
import json
import math
import sys


def f(x, fmt):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt % x


def results(paths):
    for p in paths:
        for r in json.load(open(p))["results"]:
            yield r


def name(r):
    return "auto (nested selection)" if r["nested"] else r["algo"]


def selected(r):
    n = {}
    for s in r["selected"]:
        n[s] = n.get(s, 0) + 1
    return ", ".join("%s x%d" % kv for kv in sorted(n.items(), key=lambda kv: -kv[1]))


def median_workload_rmsle(r):
    v = sorted(w["rmsle"] for w in r["per_workload"] if w["predictions"])
    k = len(v)
    return (v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) / 2) if k else float("nan")


def util_table(rs):
    print("| split | algo | interval | RMSLE [90% CI, workload bootstrap] | MAE (points) | median per-workload RMSLE "
          "| coverage of the 80% interval | median width (points) | mean-baseline RMSLE [90% CI] | selected per outer fold |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        print("| %s | %s | %s | %.3f [%.3f, %.3f] | %.1f | %.3f | %.2f | %.1f | %.3f [%.3f, %.3f] | %s |" % (
            r["split"], name(r), r["interval_method"], r["rmsle"]["mean"], r["rmsle_ci90"]["low"],
            r["rmsle_ci90"]["high"], r["mae"]["mean"], median_workload_rmsle(r), r["interval_coverage"]["mean"],
            r["interval_median_width"], r["mean_baseline_rmsle"], r["mean_baseline_rmsle_ci90"]["low"],
            r["mean_baseline_rmsle_ci90"]["high"], selected(r)))


def memory_table(r):
    m = r["memory"]
    print("| split | rows | MAPE | MAE (MiB) | high end >= measured | coverage of the 80% interval "
          "| median width (MiB) | mean-baseline MAPE |")
    print("|---|---|---|---|---|---|---|---|")
    print("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
        r["split"], m["rows"], f(m["mape"], "%.3f"), f(m["mae_mib"], "%.0f"), f(m["high_above_measured"], "%.2f"),
        f(m["coverage"], "%.2f"), f(m["median_width_mib"], "%.0f"), f(r["memory_mean_baseline_mape"], "%.3f")))


def lowo(paths):
    plain, auto, logit = (list(results([p])) for p in paths)
    print("Utilization (Lucid, 52 rows, 11 workloads):\n")
    util_table(plain + auto + logit)
    print("\nGPU memory (one model, no selection; the same predictions in every run of the split):\n")
    memory_table(plain[0])
    print("\nThe interval's width/coverage trade-off (physics, the same held-out predictions; level = the "
          "nominal level asked for; evaluate's `interval_tradeoff`):\n")
    phys = next(r for r in plain if r["algo"] == "physics")
    lg = logit[0]
    au = auto[0]
    print("| level | normalized: coverage | normalized: median width | logit: coverage | logit: median width "
          "| auto (nested), normalized: coverage | median width |")
    print("|---|---|---|---|---|---|---|")
    for a, b, c in zip(phys["interval_tradeoff"], lg["interval_tradeoff"], au["interval_tradeoff"]):
        print("| %.2f | %.2f | %.1f | %.2f | %.1f | %.2f | %.1f |" % (
            a["level"], a["coverage"], a["median_width"], b["coverage"], b["median_width"], c["coverage"],
            c["median_width"]))
    print("\nPer workload (held out; mean of its rows):\n")
    print("| workload | n | measured | physics (RMSLE) | forest (RMSLE) | auto (RMSLE) | memory measured (MiB) "
          "| memory predicted (MAPE) |")
    print("|---|---|---|---|---|---|---|---|")
    forest = next(r for r in plain if r["algo"] == "forest")
    for w, fo, a in zip(phys["per_workload"], forest["per_workload"], au["per_workload"]):
        print("| %s | %d | %.1f | %.1f (%.3f) | %.1f (%.3f) | %.1f (%.3f) | %s | %s (%s) |" % (
            w["workload"], w["predictions"], w["mean_measured"], w["mean_predicted"], w["rmsle"],
            fo["mean_predicted"], fo["rmsle"], a["mean_predicted"], a["rmsle"],
            f(w["mem_mean_measured_mib"], "%.0f"), f(w["mem_mean_predicted_mib"], "%.0f"),
            f(w["memory"]["mape"], "%.3f")))


def a100(paths):
    rs = list(results(paths))
    util_table(rs)
    print()
    memory_table(rs[0])
    print("\nPer MIG configuration (physics; mean of its rows):\n")
    print("| MIG profile | n | measured | predicted | RMSLE | coverage |")
    print("|---|---|---|---|---|---|")
    by = {}
    for p in next(r for r in rs if r["algo"] == "physics")["predictions"]:
        by.setdefault(p["mig_profile"], []).append(p)
    for k, ps in sorted(by.items()):
        e = math.sqrt(sum((math.log1p(p["predicted"]) - math.log1p(p["measured"])) ** 2 for p in ps) / len(ps))
        cov = sum(p["low"] <= p["measured"] <= p["high"] for p in ps) / len(ps)
        print("| %s | %d | %.1f | %.1f | %.3f | %.2f |" % (k, len(ps), sum(p["measured"] for p in ps) / len(ps),
                                                       sum(p["predicted"] for p in ps) / len(ps), e, cov))


def dp(paths):
    print("| model | N | single-GPU util | util (counter) | compute share | step ms (1 -> N) | scaling efficiency "
          "| all-reduce MB | comm ms | exposed ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    js = [json.load(open(p)) for p in paths]
    js.sort(key=lambda j: (j["models"][0], j["gpus"]))  # by model, then N
    for j in js:
        d = j.get("data_parallel")
        m = j["models"][0].split("/")[-1].replace(".onnx", "")
        if d is None:  # N = 1: the single-GPU answer itself
            print("| %s | 1 | %.1f | %.1f | %.1f | %.1f | 1.000 | 0.0 | 0.00 | 0.00 |" % (
                m, j["gpu_util"], j["gpu_util"], j["gpu_util"], j["step_ms"]))
            continue
        print("| %s | %d | %.1f | %.1f | %.1f | %.1f -> %.1f | %.3f | %.1f | %.2f | %.2f |" % (
            m, j["gpus"], d["single_gpu_util"], j["gpu_util"], d["compute_util"], d["single_gpu_step_ms"],
            d["step_ms"], d["scaling_efficiency"], d["allreduce_bytes"] / 1e6, d["comm_ms"], d["exposed_comm_ms"]))


def per_gpu_util(r):
    """Utilization of the held-out rows by GPU type: rows, RMSLE, coverage and median width of the interval."""
    by = {}
    for p in r["predictions"]:
        by.setdefault(p["gpu"], []).append(p)
    print("| held-out GPU | rows | measured (mean) | predicted (mean) | RMSLE | coverage of the 80% interval "
          "| median width (points) |")
    print("|---|---|---|---|---|---|---|")
    for g, ps in sorted(by.items()):
        e = math.sqrt(sum((math.log1p(p["predicted"]) - math.log1p(p["measured"])) ** 2 for p in ps) / len(ps))
        w = sorted(p["high"] - p["low"] for p in ps)
        k = len(w)
        med = w[k // 2] if k % 2 else (w[k // 2 - 1] + w[k // 2]) / 2
        print("| %s | %d | %.1f | %.1f | %.3f | %.2f | %.1f |" % (
            g, len(ps), sum(p["measured"] for p in ps) / len(ps), sum(p["predicted"] for p in ps) / len(ps), e,
            sum(p["low"] <= p["measured"] <= p["high"] for p in ps) / len(ps), med))


def steps(paths):
    lowo_p, logo_p, ev_p = paths
    lw, lg = list(results([lowo_p]))[0], list(results([logo_p]))[0]
    print("Utilization, physics, trained with the Pollux single-GPU runs as step-only rows "
          "(`--data lucid --data migprofiler --data pollux-t4`):\n")
    util_table([lw, lg])
    print("\nBy held-out GPU type (`logo`: each GPU type's rows predicted by a model that never saw that type):\n")
    per_gpu_util(lg)
    print("\nStep time of every held-out row with a measured step (single GPU; lowo: by workload or Pollux job, "
          "logo: by GPU type); error = |predicted - measured| / measured:\n")
    print("| split | GPU | rows | median error | coverage of the 80% step interval | median high / low |")
    print("|---|---|---|---|---|---|")
    for r in (lw, lg):
        for sc in r["step"]:
            print("| %s | %s | %d | %s | %s | %s |" % (
                r["split"], sc["gpu"], sc["rows"], f(100 * sc["median_ape"], "%.1f%%"), f(sc["coverage"], "%.2f"),
                f(sc["median_high_over_low"], "%.2f")))
    ev = json.load(open(ev_p))["steps"]
    pol = next(e for e in ev if e["summary"])
    zeus = next((e for e in ev if e["zeus_ratios"]), None)
    print("\nPollux (T4; `evaluate --steps pollux-t4`, physics trained on the Lucid and MIGProfiler rows only: every "
          "job and the T4 held out). Step time of each run (one rank's on several GPUs), and the all-reduce model "
          "against the measured `sync_time` beyond the same job and batch's one-GPU `sync_time`:\n")
    print("| job | GPUs | runs | median error of the step | coverage of the 80% interval | comm_ms / sync, median "
          "| exposed_comm_ms / sync, median | runs with sync | network rate the sync implies (Gb/s, one GPU a node) |")
    print("|---|---|---|---|---|---|---|---|---|")
    order = {"1 GPU": 0, "2-4 GPUs, 1 node": 1, "several nodes": 2}
    for sm in sorted(pol["summary"], key=lambda x: (x["job"], order.get(x["class"], 9))):
        print("| %s | %s | %d | %s | %.2f | %s | %s | %d | %s |" % (
            sm["job"], sm["class"], sm["runs"], f(100 * sm["median_ape"], "%.1f%%"), sm["coverage"],
            f(sm["comm_over_sync_median"], "%.2f"), f(sm["exposed_over_sync_median"], "%.2f"), sm["sync_runs"],
            f(sm["implied_network_gbps_median"], "%.1f") if sm["implied_network_runs"] else "-"))
    for o in pol.get("overall", []):
        print("| every job | %s | %d | %s | %.2f | | | | |" % (o["class"], o["runs"], f(100 * o["median_ape"], "%.1f%%"),
                                                             o["coverage"]))
    nf = pol.get("network_fit")
    if nf:
        print("\nBetween nodes: NCCL's socket transport (`--interconnect tcp`) at the achieved rate per node fitted, "
              "for each job, on the other jobs' multi-node runs (%d runs in all; their step beyond the one-GPU "
              "step): %s; on all five jobs %s Gb/s (the shipped `tcp` rate: %s Gb/s)." % (
                  nf["runs"], ", ".join("without %s %.2f Gb/s" % kv for kv in sorted(nf["without_job_gbps"].items())),
                  f(nf["all_jobs_gbps"], "%.2f"), f(nf["constant_gbps"], "%.2f")))
    print("\n%d runs on uneven placements (GPUs not divisible by nodes) are not predicted; skipped jobs (no graph): %s."
          % (pol["skipped_uneven_placements"],
             ", ".join("%s (%d runs)" % kv for kv in sorted(pol["skipped_jobs"].items())) or "none"))
    if zeus:
        print("\nZeus (`evaluate --steps zeus`): for each job and batch measured on two GPUs, the predicted ratio of "
              "their step times against the measured ratio of their epoch times, |predicted / measured - 1|:\n")
        print("| job | GPU pairs x batches | median ratio error |")
        print("|---|---|---|")
        for z in zeus["zeus_ratios"]:
            print("| %s | %d | %s |" % (z["job"], z["pairs"], f(100 * z["median_ratio_error"], "%.1f%%")))
        print("| all | %d | %s |" % (sum(z["pairs"] for z in zeus["zeus_ratios"]),
                                     f(100 * zeus["zeus_median_ratio_error"], "%.1f%%")))
        print("\n| GPU pair | pairs | median ratio error |\n|---|---|---|")
        for z in zeus["zeus_ratio_pairs"]:
            print("| %s | %d | %s |" % (z["gpus"], z["pairs"], f(100 * z["median_ratio_error"], "%.1f%%")))
        print("\nSkipped jobs (no graph): %s." % (
            ", ".join("%s (%d runs)" % kv for kv in sorted(zeus["skipped_jobs"].items())) or "none"))


def gpus():
    rows = json.load(sys.stdin)
    print("| GPU | class | architecture | form factor | source |")
    print("|---|---|---|---|---|")
    for g in rows:
        print("| %s | %s | %s | %s | %s |" % (g["name"], g["class"], g["architecture"], g["form_factor"],
                                             g["source"].replace("|", "/")))
    print("\n%d GPUs (`gpucast gpus`)." % len(rows))


if __name__ == "__main__":
    sec, args = sys.argv[1], sys.argv[2:]
    {"lowo": lambda: lowo(args), "a100": lambda: a100(args), "dp": lambda: dp(args), "gpus": gpus,
     "steps": lambda: steps(args)}[sec]()
