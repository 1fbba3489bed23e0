#!/usr/bin/python3
"""Score gpucast's predictions on a folder that tools/measure/measure.py (or device_check.sh) wrote.

usage: /usr/bin/python3 tools/measure/measured_check.py DIR [--gpucast build/gpucast]
           [--predictor FILE] [--data ../shared/data] [--level 0.8] [--json]

Every row of DIR/single_data.csv is predicted by `gpucast predict` with its catalog workload's graphs,
dims and job facts (models/catalog.json, as `train --data` reads the same rows) on the GPU of its
`gpu` column. The predictor is FILE, or one `gpucast train` makes on its default data (Lucid's RTX 3090
rows and MIGProfiler's A100 rows): a GPU the predictor has rows of is not held out, and the output
says so. The figures are those issues 36 and 37 judge on measurements the project has not seen:
- utilization: RMSLE (log1p) against a constant (the measured rows' mean: the best constant there
  is for these rows), the share inside the interval and its median width (points);
- step time: median |predicted - measured| / measured (measured: batch / speed, the step gpucast
  predicts), the share inside the step interval, and for each configuration Lucid also measured on
  the RTX 3090, the predicted ratio of the two GPUs' steps against the measured one;
- GPU memory: MAPE against the run's mean nvidia-smi memory (`gmem`, the quantity gpucast is trained
  on) and against its peak (runs.csv `gmem_peak`, what a limit must hold), the share of rows whose
  high end holds the peak, and the median width / point;
- repeats (runs.csv): per configuration run more than once, the spread of utilization, step and peak
  memory between runs: the counter's and the job's own noise, no model in it;
- the fixed part (context.json of tools/measure/context_probe.py): nvidia-smi's memory above the idle
  GPU after CUDA's init, cuBLAS and cuDNN, beside gpucast's `context` + `cublas_workspace` + `cudnn`
  components of the smallest predicted job.
Nothing is fitted here. Exit status 0 when every row was predicted, 1 when some could not be, 2 on bad
input (a missing or malformed file, rows of several GPUs or of none).
"""
import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# Targets of the open issues, for the summary's last column (issue 36 and 37's "done when").
TARGETS = {"util_rmsle_over_constant": "<= 0.8", "util_coverage": ">= 0.75", "step_median_ape": "<= 0.12",
           "ratio_median_error": "<= 0.05", "mem_mape_peak": "<= 0.12", "mem_high_holds_peak": ">= 0.95"}


class CheckError(Exception):
    pass


def read_csv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise CheckError(f"{path}: {e.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise CheckError(f"{path}: not a CSV ({e})") from None


def number(row, key, path, line):
    try:
        v = float(row[key])
    except (KeyError, TypeError, ValueError):
        raise CheckError(f"{path}:{line}: column '{key}': {row.get(key)!r} is not a number") from None
    if not math.isfinite(v):
        raise CheckError(f"{path}:{line}: column '{key}': {row[key]!r} is not finite")
    return v


def rmsle(pred, meas):
    return math.sqrt(statistics.fmean((math.log1p(p) - math.log1p(m)) ** 2 for p, m in zip(pred, meas)))


def median_ape(pred, meas):
    return statistics.median(abs(p - m) / m for p, m in zip(pred, meas))


def inside(lows, highs, meas):
    return statistics.fmean(1.0 if lo <= m <= hi else 0.0 for lo, hi, m in zip(lows, highs, meas))


def util_figures(rows):
    """rows: dicts with measured, predicted, low, high (percent)."""
    meas = [r["measured"] for r in rows]
    pred = [r["predicted"] for r in rows]
    const = statistics.fmean(meas)
    f = {"rows": len(rows), "rmsle": rmsle(pred, meas), "constant": const, "constant_rmsle": rmsle([const] * len(meas), meas),
         "coverage": inside([r["low"] for r in rows], [r["high"] for r in rows], meas),
         "median_width": statistics.median(r["high"] - r["low"] for r in rows)}
    f["rmsle_over_constant"] = f["rmsle"] / f["constant_rmsle"] if f["constant_rmsle"] > 0 else None
    return f


def step_figures(rows):
    rows = [r for r in rows if r.get("step_measured_ms") and r.get("step_ms")]
    if not rows:
        return None
    meas = [r["step_measured_ms"] for r in rows]
    f = {"rows": len(rows), "median_ape": median_ape([r["step_ms"] for r in rows], meas),
         "coverage": inside([r["step_low_ms"] for r in rows], [r["step_high_ms"] for r in rows], meas)}
    ratios = [r for r in rows if r.get("ref_step_measured_ms") and r.get("ref_step_ms")]
    if ratios:
        errs = [abs((r["step_ms"] / r["ref_step_ms"]) / (r["step_measured_ms"] / r["ref_step_measured_ms"]) - 1)
                for r in ratios]
        f.update(ratio_rows=len(ratios), ratio_median_error=statistics.median(errs))
    return f


def memory_figures(rows):
    rows = [r for r in rows if r.get("mem_mib")]
    if not rows:
        return None
    f = {"rows": len(rows), "mape_mean": statistics.fmean(abs(r["mem_mib"] - r["mem_measured_mib"]) / r["mem_measured_mib"]
                                                          for r in rows),
         "median_width_over_point": statistics.median((r["mem_high_mib"] - r["mem_low_mib"]) / r["mem_mib"] for r in rows)}
    peak = [r for r in rows if r.get("mem_peak_mib")]
    if peak:
        f.update(peak_rows=len(peak),
                 mape_peak=statistics.fmean(abs(r["mem_mib"] - r["mem_peak_mib"]) / r["mem_peak_mib"] for r in peak),
                 high_holds_peak=statistics.fmean(1.0 if r["mem_high_mib"] >= r["mem_peak_mib"] else 0.0 for r in peak))
    return f


def repeat_figures(runs):
    """Per configuration with two or more successful runs: the spread between runs."""
    by = {}
    for r in runs:
        if r.get("error"):
            continue
        by.setdefault((r["model"], r["dataset"], int(r["batchsize"]), int(r["amp"])), []).append(r)
    out = []
    for cfg, rs in by.items():
        if len(rs) < 2:
            continue
        util = [float(r["gpu_util"]) for r in rs if r.get("gpu_util")]
        step = [float(r["step_time_ms"]) for r in rs if r.get("step_time_ms")]
        peak = [float(r["gmem_peak"]) for r in rs if r.get("gmem_peak")]
        out.append({"config": list(cfg), "runs": len(rs),
                    "util_min": min(util) if util else None, "util_max": max(util) if util else None,
                    "step_spread": max(step) / min(step) - 1 if step else None,
                    "peak_mib_min": min(peak) if peak else None, "peak_mib_max": max(peak) if peak else None})
    return out


def predict_args(workload, batch, amp, gpu):
    """gpucast predict's arguments for one catalog workload; None when a graph's repeat is not whole."""
    args = []
    for g in workload["graphs"]:
        if g["repeat"] != int(g["repeat"]) or g["repeat"] < 1:
            return None
        args += ["-m", os.path.join(ROOT, "models", g["file"])] * int(g["repeat"])
    args += ["--batch", str(batch)] + (["--amp"] if amp else [])
    for k, v in workload.get("dims", {}).items():
        args += ["--dim", f"{k}={v}"]
    for k, v in workload.get("attrs", {}).items():
        args += ["--attr", f"{k}={v}"]
    return args + ["--gpu", gpu]


def predict(gpucast, predictor, args, level):
    r = subprocess.run([gpucast, "predict", "-p", predictor, "--json", "--quiet", "--level", str(level)] + args,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise CheckError(r.stderr.strip() or f"gpucast predict exited {r.returncode}")
    d = json.loads(r.stdout)
    out = {"predicted": d["gpu_util"], "low": d["interval"]["low"], "high": d["interval"]["high"],
           "gpu_measured": d.get("gpu_measured"), "resolved_gpu": d.get("gpu")}
    if d.get("step_ms"):
        out.update(step_ms=d["step_ms"], step_low_ms=d["step_ms_interval"]["low"],
                   step_high_ms=d["step_ms_interval"]["high"])
    if d.get("gpu_mem_mib"):
        c = d.get("gpu_mem_components_mib") or {}
        out.update(mem_mib=d["gpu_mem_mib"], mem_low_mib=d["gpu_mem_interval"]["low"],
                   mem_high_mib=d["gpu_mem_interval"]["high"],
                   mem_fixed_mib=sum(c.get(k, 0.0) for k in ("context", "cublas_workspace", "cudnn")))
    return out


def check(folder, gpucast, predictor, data, level):
    path = os.path.join(folder, "single_data.csv")
    rows = read_csv(path)
    if not rows:
        raise CheckError(f"{path}: no rows")
    gpus = {r.get("gpu") or "" for r in rows}
    if len(gpus) != 1 or "" in gpus:
        raise CheckError(f"{path}: want one GPU name in every row's 'gpu' column, got {sorted(gpus)}")
    gpu = gpus.pop()
    runs_path = os.path.join(folder, "runs.csv")
    runs = read_csv(runs_path) if os.path.exists(runs_path) else []
    first_peak = {}
    for r in runs:
        key = (r.get("model"), r.get("dataset"), r.get("batchsize"), r.get("amp"))
        if not r.get("error") and r.get("gmem_peak") and key not in first_peak:
            first_peak[key] = float(r["gmem_peak"])
    with open(os.path.join(ROOT, "models", "catalog.json")) as f:
        catalog = json.load(f)
    workloads = {(w["model"], w["dataset"]): w for w in catalog["workloads"]}
    ref_gpu = catalog["gpu"]
    lucid = {(r["model"], r["dataset"], r["batchsize"], r["amp"]): r
             for r in read_csv(os.path.join(data, "lucid", "single_data.csv"))}
    with open(predictor) as f:
        trained_gpus = json.load(f).get("measured_gpus") or []
    out_rows, problems = [], []
    for line, r in enumerate(rows, start=2):
        key = (r["model"], r["dataset"], r["batchsize"], r["amp"])
        w = workloads.get(key[:2])
        if w is None:
            problems.append(f"{path}:{line}: {key[0]}/{key[1]} is not a catalog workload")
            continue
        batch, amp = int(number(r, "batchsize", path, line)), int(number(r, "amp", path, line))
        args = predict_args(w, batch, amp, gpu)
        if args is None:
            problems.append(f"{path}:{line}: {key[0]}: a graph repeats a fraction of a step (not expressible with predict -m)")
            continue
        try:
            p = predict(gpucast, predictor, args, level)
        except CheckError as e:
            problems.append(f"{path}:{line}: {e}")
            continue
        # A step from batch / speed only where speed counts samples (not PPO's and TD3's), as train --data.
        steps = w.get("speed_is_samples_per_s", True)
        speed = number(r, "speed", path, line)
        row = {"model": key[0], "dataset": key[1], "batch": batch, "amp": amp, "gpu": gpu,
               "measured": number(r, "gpu_util", path, line), "step_measured_ms": 1e3 * batch / speed if steps else None,
               "mem_measured_mib": number(r, "gmem", path, line), "mem_peak_mib": first_peak.get(key), **p}
        ref = lucid.get(key)
        if steps and ref and ref.get("speed"):
            try:
                q = predict(gpucast, predictor, predict_args(w, batch, amp, ref_gpu), level)
                row.update(ref_gpu=ref_gpu, ref_step_ms=q.get("step_ms"), ref_step_measured_ms=1e3 * batch / float(ref["speed"]))
            except CheckError as e:
                problems.append(f"{path}:{line}: on {ref_gpu}: {e}")
        out_rows.append(row)
    if not out_rows:
        raise CheckError(f"{path}: no row could be predicted: " + "; ".join(problems))
    resolved = out_rows[0]["resolved_gpu"]
    context = None
    if os.path.exists(os.path.join(folder, "context.json")):
        try:
            with open(os.path.join(folder, "context.json")) as f:
                probe = json.load(f)
            stages = {s["stage"]: float(s["above_before_mib"]) for s in probe.get("stages", [])}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CheckError(f"{os.path.join(folder, 'context.json')}: not context_probe's output ({e})") from None
        smallest = min((r for r in out_rows if r.get("mem_mib")), key=lambda r: r["mem_mib"], default=None)
        context = {"measured_above_idle_mib": stages, "error": probe.get("error"),
                   "cuda_module_loading": probe.get("cuda_module_loading"),
                   "predicted_fixed_mib": smallest and smallest["mem_fixed_mib"],
                   "predicted_for": smallest and f"{smallest['model']} batch {smallest['batch']}"}
    return {"folder": folder, "gpu": gpu, "resolved_gpu": resolved,
            "held_out": resolved not in trained_gpus, "predictor_gpus": trained_gpus, "level": level,
            "rows": out_rows, "problems": problems, "util": util_figures(out_rows), "step": step_figures(out_rows),
            "memory": memory_figures(out_rows), "repeats": repeat_figures(runs), "context": context}


def fmt(v, spec=".3f"):
    return "-" if v is None else format(v, spec)


def markdown(res):
    lines = [f"Measured on {res['gpu']} (gpucast: {res['resolved_gpu']}); the predictor's GPUs: "
             + ", ".join(res["predictor_gpus"]) + ("" if res["held_out"] else
                                                   f" -- {res['resolved_gpu']} is among them: NOT held out"), ""]
    lines += ["| workload | batch | AMP | util measured | predicted (interval) | step ms measured | predicted (interval) "
              "| memory MiB mean / peak | predicted (high end) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        lines.append(f"| {r['model']}/{r['dataset']} | {r['batch']} | {r['amp']} | {r['measured']:.1f} | "
                     f"{r['predicted']:.1f} ({r['low']:.1f}-{r['high']:.1f}) | {r['step_measured_ms']:.1f} | "
                     f"{fmt(r.get('step_ms'), '.1f')} ({fmt(r.get('step_low_ms'), '.1f')}-{fmt(r.get('step_high_ms'), '.1f')}) | "
                     f"{r['mem_measured_mib']:.0f} / {fmt(r.get('mem_peak_mib'), '.0f')} | "
                     f"{fmt(r.get('mem_mib'), '.0f')} ({fmt(r.get('mem_high_mib'), '.0f')}) |")
    u, s, m = res["util"], res["step"] or {}, res["memory"] or {}
    lines += ["", "| figure | value | target (issues 36, 37) |", "|---|---|---|",
              f"| utilization RMSLE / a constant's ({u['constant']:.1f} %) | {u['rmsle']:.3f} / {u['constant_rmsle']:.3f} = "
              f"{fmt(u['rmsle_over_constant'], '.2f')} | {TARGETS['util_rmsle_over_constant']} |",
              f"| utilization rows inside the {res['level']:.0%} interval (median width, points) | {u['coverage']:.2f} "
              f"({u['median_width']:.1f}) | {TARGETS['util_coverage']} |",
              f"| step time, median error (rows inside the interval) | {fmt(s.get('median_ape'), '.1%')} "
              f"({fmt(s.get('coverage'), '.2f')}) | {TARGETS['step_median_ape']} |",
              f"| step ratio to the RTX 3090 (Lucid's rows), median error ({s.get('ratio_rows', 0)} rows) | "
              f"{fmt(s.get('ratio_median_error'), '.1%')} | {TARGETS['ratio_median_error']} |",
              f"| memory MAPE against the peak / the mean | {fmt(m.get('mape_peak'), '.1%')} / {fmt(m.get('mape_mean'), '.1%')} "
              f"| {TARGETS['mem_mape_peak']} |",
              f"| memory: rows whose high end holds the peak (median width / point) | {fmt(m.get('high_holds_peak'), '.2f')} "
              f"({fmt(m.get('median_width_over_point'), '.2f')}) | {TARGETS['mem_high_holds_peak']} |"]
    if res["repeats"]:
        lines += ["", "| repeated configuration | runs | utilization min-max | step spread | peak memory MiB min-max |",
                  "|---|---|---|---|---|"]
        for r in res["repeats"]:
            c = r["config"]
            lines.append(f"| {c[0]}/{c[1]} batch {c[2]} AMP {c[3]} | {r['runs']} | {fmt(r['util_min'], '.1f')}-"
                         f"{fmt(r['util_max'], '.1f')} | {fmt(r['step_spread'], '.1%')} | {fmt(r['peak_mib_min'], '.0f')}-"
                         f"{fmt(r['peak_mib_max'], '.0f')} |")
    c = res.get("context")
    if c:
        lines += ["", "Fixed part (context_probe): nvidia-smi MiB above the idle GPU after "
                  + (", ".join(f"{k} {v:.0f}" for k, v in c["measured_above_idle_mib"].items()) or "-")
                  + (f" (error: {c['error']})" if c["error"] else "")
                  + f"; CUDA_MODULE_LOADING {c['cuda_module_loading']}; gpucast's context + cuBLAS + cuDNN for "
                  f"{c['predicted_for']}: {fmt(c['predicted_fixed_mib'], '.0f')} MiB"]
    for p in res["problems"]:
        lines.append(f"not predicted: {p}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--gpucast", default=os.path.join(ROOT, "build", "gpucast"))
    ap.add_argument("--predictor", help="model file (default: `gpucast train` on its default data)")
    ap.add_argument("--data", default=os.environ.get("GPUCAST_DATA") or os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--level", type=float, default=0.8)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        if not os.path.isfile(a.gpucast):
            raise CheckError(f"{a.gpucast}: no gpucast binary (make build, or --gpucast)")
        with tempfile.TemporaryDirectory() as tmp:
            predictor = a.predictor
            if not predictor:
                predictor = os.path.join(tmp, "predictor.json")
                print("measured_check: training the default predictor (about a minute)", file=sys.stderr)
                r = subprocess.run([a.gpucast, "train", "--out", predictor, "--quiet"], capture_output=True, text=True,
                                   env={**os.environ, "GPUCAST_DATA": a.data})
                if r.returncode != 0:
                    raise CheckError(f"gpucast train: {r.stderr.strip()}")
            res = check(a.folder, a.gpucast, predictor, a.data, a.level)
    except CheckError as e:
        print(f"measured_check: {e}", file=sys.stderr)
        return 2
    print(json.dumps(res, indent=1) if a.json else markdown(res))
    return 1 if res["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
