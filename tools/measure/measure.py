#!/usr/bin/python3
"""Measure training jobs' GPU utilization the way data/lucid was made, writing rows in its schema.

usage: /usr/bin/python3 tools/measure/measure.py --out DIR [--only MODEL ...] [--batches 32,64,128]
           [--amp 0,1] [--repeats 1] [--config MODEL:BATCH:AMP[:REPEATS] ...] [--seconds 30]
           [--budget SECONDS] [--pairs K] [--gpu 0] [--dry-run]

Each configuration (workload, batch, amp) trains alone for --seconds in its own process; once its
warm-up iterations are done, nvidia-smi is sampled about 5 times a second until it stops. A
configuration with repeats runs again after every configuration's first run (so a --budget cut
drops repeats first). Then K sampled pairs of configurations run together on the same GPU (two
processes). Writes, rewritten after every run (a run stopped half-way keeps what was measured):
  DIR/single_data.csv     model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label,gpu
                          (Lucid's columns, then the GPU's nvidia-smi name: `gpucast train --data`
                          reads it; one row a configuration, its first run)
  DIR/runs.csv            every run, repeats included: its step time, the spread of the
                          utilization samples, peak nvidia-smi memory, PyTorch's peak allocator
                          figures, and an `error` for a run that failed
  DIR/environment.json    GPU (nvidia-smi), driver, PyTorch/CUDA/cuDNN, TF32 defaults, CPU, the
                          harness files' sha256, the plan and what the budget skipped
  DIR/colocate_info.csv   ,model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,...,gmem
  DIR/onnx/               each job's graphs (the same weight-free exports as models/)
`label` (Lucid's sharing score, not a measurement) is left empty.

--dry-run (CPU-only machines): validates the plan, runs two training iterations of every
configuration on the CPU with tiny sizes, and writes the CSVs with the GPU and speed columns
EMPTY: no utilization number is measured or invented.
"""
import argparse
import csv
import hashlib
import itertools
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import workloads as W  # noqa: E402

LUCID_COLUMNS = ["model", "dataset", "batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem", "label"]
# Lucid's columns and the GPU's name (gpucast's CSV reader takes a `gpu` column: rows of several GPUs
# can be given to one `train --data`). No `step_ms` column: to gpucast that marks DCGM-measured rows.
SINGLE_COLUMNS = LUCID_COLUMNS + ["gpu"]
# Every run (repeats too). step_time_ms = batch / speed; gpu_util_sd: the spread of the nvidia-smi
# samples within the run; gmem_peak: their maximum (MiB); torch_peak_*: torch.cuda.max_memory_*.
RUN_COLUMNS = ["model", "dataset", "batchsize", "amp", "repeat", "gpu", "speed", "step_time_ms", "gpu_util",
               "gpu_util_sd", "gmem_util", "gmem", "gmem_peak", "torch_peak_reserved_mib",
               "torch_peak_allocated_mib", "smi_samples", "steps", "timed_seconds", "wall_seconds", "error"]
PAIR_JOB = ["model", "dataset", "gpu_num", "batchsize", "amp", "speed"]
COLOCATE_COLUMNS = [""] + [c + "1" for c in PAIR_JOB] + [c + "2" for c in PAIR_JOB] + ["gpu_util", "gmem_util", "gmem"]
SMI_QUERY = "utilization.gpu,utilization.memory,memory.used"
# What environment.json records of the GPU, one nvidia-smi query each (an unknown field fails alone).
SMI_FACTS = ["name", "driver_version", "memory.total", "power.limit", "power.max_limit", "clocks.max.sm",
             "clocks.max.memory", "pcie.link.gen.max", "pcie.link.width.max", "compute_cap", "mig.mode.current"]
FIRST_RUN_ESTIMATE_S = 45  # the budget's guess of a first run's time beyond --seconds (start, warm-up)
BUDGET_GRACE_S = 30  # a run still going this long past --budget is killed (recorded as an error)
KILL_AFTER_S = 300  # a run still going this long after --seconds is killed and recorded as an error
WARMUP = {"BERT": 20}  # warm-up iterations (default 5: RL steps are whole rollouts/episodes)


def plan(only, batches, amps):
    """Configurations (model, dataset, batch, amp) in catalog order."""
    ws = [w for w in W.WORKLOADS if not only or w["model"] in only]
    unknown = set(only or []) - {w["model"] for w in W.WORKLOADS}
    if unknown:
        raise SystemExit(f"measure: unknown workload(s) {sorted(unknown)}; known: "
                         + ", ".join(w["model"] for w in W.WORKLOADS))
    return [(w["model"], w["dataset"], b, a) for w in ws for b in batches for a in amps]


def parse_config(text):
    """'MODEL[/DATASET]:BATCH:AMP[:REPEATS]' -> ((model, dataset, batch, amp), repeats)."""
    parts = text.split(":")
    if len(parts) not in (3, 4):
        raise ValueError(f"--config {text!r}: want MODEL[/DATASET]:BATCH:AMP[:REPEATS]")
    model, _, dataset = parts[0].partition("/")
    ws = [w for w in W.WORKLOADS if w["model"] == model and (not dataset or w["dataset"] == dataset)]
    if len(ws) != 1:
        raise ValueError(f"--config {text!r}: " + ("no" if not ws else "more than one") + " catalog workload "
                         + f"{parts[0]!r}; known: " + ", ".join(f"{w['model']}/{w['dataset']}" for w in W.WORKLOADS))
    try:
        batch, amp = int(parts[1]), int(parts[2])
        repeats = int(parts[3]) if len(parts) == 4 else 1
    except ValueError:
        raise ValueError(f"--config {text!r}: BATCH, AMP and REPEATS are integers") from None
    if batch < 1 or amp not in (0, 1) or repeats < 1:
        raise ValueError(f"--config {text!r}: want BATCH >= 1, AMP 0 or 1, REPEATS >= 1")
    return (ws[0]["model"], ws[0]["dataset"], batch, amp), repeats


def run_order(repeats):
    """[(cfg, repeat index)]: every configuration's first run in plan order, then second runs, ..."""
    return [(c, r) for r in range(max(repeats.values(), default=0)) for c in repeats if r < repeats[c]]


def pick_pairs(configs, k, seed=0):
    """k distinct unordered pairs (self-pairs allowed), sampled with a fixed seed."""
    pairs = list(itertools.combinations_with_replacement(configs, 2))
    return random.Random(seed).sample(pairs, min(k, len(pairs)))


def parse_smi(text):
    """'util, mem_util, mem_used' lines of nvidia-smi (noheader, nounits) -> [(gpu%, mem%, MiB)]."""
    out = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            raise ValueError(f"nvidia-smi: want 3 fields, got {line!r}")
        if any("N/A" in p for p in parts):
            # nvidia-smi has no utilization.gpu for a GPU in MIG mode; the MIG rows of
            # ../shared/data/migprofiler-a100 are DCGM's GR-engine-active instead (docs/features.md).
            raise ValueError(f"nvidia-smi reports N/A ({line.strip()!r}): a GPU in MIG mode has no "
                             "utilization.gpu; this harness measures whole GPUs only")
        out.append(tuple(float(p) for p in parts))
    return out


def _fmt(v):
    if v is None:
        return ""
    return f"{v:.3f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def write_csv(path, columns, rows):
    """rows: dicts keyed by column (missing or None -> empty field); unknown keys are an error."""
    with open(path, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(columns)
        for i, r in enumerate(rows):
            extra = set(r) - set(columns)
            if extra:
                raise ValueError(f"{path}: row {i}: unknown columns {sorted(extra)}")
            wr.writerow([_fmt(r.get(c)) for c in columns])


def single_row(cfg, res, gpu=None):
    m, d, b, a = cfg
    res = res or {}
    return {"model": m, "dataset": d, "batchsize": b, "amp": a, "speed": res.get("speed"),
            "gpu_util": res.get("gpu_util"), "gmem_util": res.get("gmem_util"), "gmem": res.get("gmem"), "gpu": gpu}


def run_row(cfg, repeat, res, gpu=None, error=None):
    m, d, b, a = cfg
    res = res or {}
    speed = res.get("speed")
    row = {"model": m, "dataset": d, "batchsize": b, "amp": a, "repeat": repeat, "gpu": gpu, "speed": speed,
           "step_time_ms": 1e3 * b / speed if speed else None, "gmem_peak": res.get("gmem_peak"),
           "gpu_util_sd": res.get("gpu_util_sd"), "smi_samples": res.get("samples"), "error": error}
    for k in ("gpu_util", "gmem_util", "gmem", "torch_peak_reserved_mib", "torch_peak_allocated_mib", "steps",
              "timed_seconds", "wall_seconds"):
        row[k] = res.get(k)
    return row


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def smi_facts(gpu):
    """{field: value or an 'error: ...' string} of SMI_FACTS for GPU index gpu."""
    out = {}
    for field in SMI_FACTS:
        try:
            r = subprocess.run(["nvidia-smi", f"--id={gpu}", f"--query-gpu={field}", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=20)
            out[field] = r.stdout.strip() if r.returncode == 0 else f"error: {(r.stdout + r.stderr).strip()[:200]}"
        except (OSError, subprocess.SubprocessError) as e:
            out[field] = f"error: {e}"
    return out


def environment(gpu, dry_run):
    """What made the numbers: the harness files, Python, PyTorch and its defaults, CPU, GPU, driver.
    No CUDA call here: a context in this process would add to the memory nvidia-smi reports."""
    env = {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "dry_run": dry_run,
           "gpucast_commit": os.environ.get("GPUCAST_COMMIT") or None, "python": sys.version.split()[0],
           "platform": platform.platform(), "cpu_count": os.cpu_count(),
           "harness_sha256": {os.path.relpath(p, os.path.join(HERE, "..", "..")): sha256(p) for p in
                              (os.path.abspath(__file__), os.path.join(HERE, "jobs.py"),
                               os.path.join(HERE, "..", "workloads.py"))}}
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), None)
    except OSError:
        env["cpu_model"] = None
    try:
        import torch
        env.update(torch=torch.__version__, torch_cuda=torch.version.cuda)
    except Exception as e:  # noqa: BLE001 - recorded, not fatal: the runs say whether torch works
        env["torch"] = f"error: {e}"
    else:
        # Each on its own: a newer PyTorch may deprecate a flag (2.9's fp32_precision) without the rest failing.
        for key, get in [("cudnn", lambda: torch.backends.cudnn.version()),
                         ("tf32_matmul", lambda: torch.backends.cuda.matmul.allow_tf32),
                         ("tf32_cudnn", lambda: torch.backends.cudnn.allow_tf32),
                         ("matmul_fp32_precision", lambda: torch.backends.cuda.matmul.fp32_precision),
                         ("cudnn_benchmark", lambda: torch.backends.cudnn.benchmark),
                         ("float32_matmul_precision", lambda: torch.get_float32_matmul_precision())]:
            try:
                env[key] = get()
            except Exception as e:  # noqa: BLE001
                env[key] = f"error: {type(e).__name__}: {e}"
    env["gpu"] = None if dry_run else smi_facts(gpu)
    return env


def pair_row(i, c1, c2, res, alone):
    """Co-located row; speed1/2 normalised to each job's throughput alone (as Lucid's table)."""
    res = res or {}
    row = {"": i, "gpu_util": res.get("gpu_util"), "gmem_util": res.get("gmem_util"), "gmem": res.get("gmem_peak")}
    for k, c in (("1", c1), ("2", c2)):
        s, s0 = res.get("speed" + k), (alone.get(c) or {}).get("speed")
        row.update({"model" + k: c[0], "dataset" + k: c[1], "gpu_num" + k: 1, "batchsize" + k: c[2],
                    "amp" + k: c[3], "speed" + k: s / s0 if s and s0 else None})
    return row


def export_onnx(configs, out):
    import warnings

    import export_workloads as E
    warnings.filterwarnings("ignore")
    os.makedirs(out, exist_ok=True)
    for model in dict.fromkeys(c[0] for c in configs):
        w = next(x for x in W.WORKLOADS if x["model"] == model)
        for g in w["graphs"]:
            path = os.path.join(out, W.graph_file(w, g))
            E.export_graph(W.build(g), g, w["dims"], path)
            E.check(path)


# ---------------------------------------------------------------- one job (a worker process)

def run_worker(cfg, seconds, ready, result, device, tiny, iters=None):
    """Trains cfg: warm-up, touch `ready`, then timed steps for `seconds` (or `iters` steps)."""
    import torch

    import jobs
    torch.manual_seed(0)
    model, dataset, batch, amp = cfg
    job = jobs.Job(W.find(model, dataset), batch, bool(amp), device, tiny=tiny)
    for _ in range(1 if tiny else WARMUP.get(model, 5)):
        job.step()
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    sync()
    if ready:
        open(ready, "w").close()
    samples, t0 = 0, time.perf_counter()
    n = 0
    while (iters is None and time.perf_counter() - t0 < seconds) or (iters is not None and n < iters):
        samples += job.step()
        n += 1
    sync()
    dt = time.perf_counter() - t0
    r = {"samples": samples, "seconds": dt, "steps": n, "speed": samples / dt}
    if device.startswith("cuda"):
        r.update(torch_peak_reserved_mib=torch.cuda.max_memory_reserved() / 2**20,
                 torch_peak_allocated_mib=torch.cuda.max_memory_allocated() / 2**20)
    if result:
        with open(result, "w") as f:
            json.dump(r, f)
    return r


def run_together(cfgs, seconds, gpu, worker_device="cuda", stop_at=None):
    """Runs cfgs as concurrent worker processes on GPU `gpu`; samples nvidia-smi ~5 Hz from the
    moment all have warmed up until the first finishes. Returns per-job speeds and GPU means (one
    job: also its steps, timed seconds and PyTorch's peak memory). A worker that fails, or is still
    running KILL_AFTER_S seconds past `seconds` or at `stop_at` (time.time(); the budget's end),
    raises RuntimeError (the others are killed).
    worker_device "cpu" (tests only): tiny jobs on the CPU, nvidia-smi whatever is first on PATH."""
    tmp = tempfile.mkdtemp(prefix="gpucast-measure-")
    procs, readies, results = [], [], []
    t_start = time.time()
    deadline = min(t_start + seconds + KILL_AFTER_S, stop_at or float("inf"))
    try:
        for i, c in enumerate(cfgs):
            readies.append(os.path.join(tmp, f"ready{i}"))
            results.append(os.path.join(tmp, f"result{i}.json"))
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(c),
                                           "--seconds", str(seconds), "--ready", readies[-1], "--result", results[-1],
                                           "--worker-device", worker_device],
                                          env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}))
        while not all(os.path.exists(r) for r in readies):
            if any(p.poll() not in (None, 0) for p in procs) or time.time() > deadline:
                break
            time.sleep(0.05)
        samples = []
        while all(p.poll() is None for p in procs) and time.time() < deadline:
            t = time.time()
            out = subprocess.run(["nvidia-smi", f"--id={gpu}", f"--query-gpu={SMI_QUERY}",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
            samples += parse_smi(out.stdout)
            time.sleep(max(0.0, 0.2 - (time.time() - t)))
        for p in procs:
            try:
                p.wait(timeout=max(0.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        if any(p.poll() is None for p in procs):
            raise RuntimeError(f"worker still running {time.time() - t_start:.0f} s after it started (killed: "
                               + ("the budget's end" if stop_at and deadline == stop_at else
                                  f"{KILL_AFTER_S} s past --seconds") + f") for {cfgs}")
        if any(p.returncode for p in procs):
            raise RuntimeError(f"worker failed for {cfgs}: exit codes {[p.returncode for p in procs]}")
        res = {"samples": len(samples), "wall_seconds": time.time() - t_start}
        if samples:
            mean = sum(s[0] for s in samples) / len(samples)
            res.update(gpu_util=mean, gpu_util_sd=(sum((s[0] - mean) ** 2 for s in samples) / len(samples)) ** 0.5,
                       gmem_util=sum(s[1] for s in samples) / len(samples),
                       gmem=sum(s[2] for s in samples) / len(samples), gmem_peak=max(s[2] for s in samples))
        for i, r in enumerate(results):
            with open(r) as f:
                w = json.load(f)
            res["speed" + ("" if len(cfgs) == 1 else str(i + 1))] = w["speed"]
            if len(cfgs) == 1:
                res.update(steps=w["steps"], timed_seconds=w["seconds"],
                           **{k: w[k] for k in ("torch_peak_reserved_mib", "torch_peak_allocated_mib") if k in w})
        return res
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--only", nargs="*", help="workload model names (default: all 11)")
    ap.add_argument("--batches", default="32,64,128")
    ap.add_argument("--amp", default="0,1")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each planned configuration")
    ap.add_argument("--config", action="append", default=[], metavar="MODEL[/DATASET]:BATCH:AMP[:REPEATS]",
                    help="a configuration to run (repeatable); given, it replaces --only/--batches/--amp/--repeats")
    ap.add_argument("--seconds", type=float, default=30.0, help="timed seconds per run")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds for the whole measurement (0: none): a run that would end past it is not "
                         "started (estimated as the longest run so far), and is listed as skipped")
    ap.add_argument("--pairs", type=int, default=0, help="number of sampled co-located pairs")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--no-onnx", action="store_true", help="skip the ONNX export of each job")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes, no GPU numbers")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--ready", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    # Tests only: the runs' workers train tiny jobs on the CPU (nvidia-smi is then a stand-in on PATH).
    ap.add_argument("--worker-device", default="cuda", choices=["cuda", "cpu"], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        run_worker(tuple(json.loads(a.worker)), a.seconds, a.ready, a.result, a.worker_device,
                   tiny=a.worker_device == "cpu")
        return 0
    if not a.out:
        ap.error("--out is required")
    try:
        batches = [int(x) for x in a.batches.split(",")]
        amps = [int(x) for x in a.amp.split(",")]
    except ValueError:
        ap.error("--batches and --amp take comma-separated integers")
    if min(batches) < 1 or set(amps) - {0, 1} or a.seconds <= 0 or a.pairs < 0 or a.repeats < 1 or a.budget < 0:
        ap.error("batches must be >= 1, amp 0 or 1, --seconds > 0, --pairs >= 0, --repeats >= 1, --budget >= 0")
    if a.config:
        repeats = {}
        for text in a.config:
            try:
                cfg, n = parse_config(text)
            except ValueError as e:
                ap.error(str(e))
            repeats[cfg] = repeats.get(cfg, 0) + n
    else:
        repeats = {c: a.repeats for c in plan(a.only, batches, amps)}
    configs = list(repeats)
    pairs = pick_pairs(configs, a.pairs)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    env = environment(a.gpu, a.dry_run)
    gpu_name = None if a.dry_run else (env["gpu"] or {}).get("name")
    if gpu_name and gpu_name.startswith("error:"):
        gpu_name = None
    order = run_order(repeats)
    env.update(plan=[{"config": list(c), "repeats": n} for c, n in repeats.items()], seconds=a.seconds,
               budget=a.budget, skipped=[])

    def save(single, runs, prow=None):
        write_csv(os.path.join(a.out, "single_data.csv"), SINGLE_COLUMNS, single)
        write_csv(os.path.join(a.out, "runs.csv"), RUN_COLUMNS, runs)
        if prow is not None:
            write_csv(os.path.join(a.out, "colocate_info.csv"), COLOCATE_COLUMNS, prow)
        with open(os.path.join(a.out, "environment.json"), "w") as f:
            json.dump(env, f, indent=1)
            f.write("\n")

    print(f"measure: {len(configs)} configurations, {len(order)} runs, {len(pairs)} pairs -> {a.out}"
          + (" (dry run: CPU, tiny sizes, GPU and speed columns left empty)" if a.dry_run else "")
          + (f"; GPU {gpu_name}" if gpu_name else ""), flush=True)
    alone, runs, longest = {}, [], 0.0  # alone: each configuration's first successful run

    def singles():
        return [single_row(c, alone[c], gpu_name) for c in configs if c in alone]

    def over_budget():
        """Would a run started now end past the budget (the first estimated, then the longest so far)?"""
        return a.budget and time.time() - t0 + (longest or a.seconds + FIRST_RUN_ESTIMATE_S) > a.budget

    stop_at = t0 + a.budget + BUDGET_GRACE_S if a.budget else None
    save([], [])
    for c, rep in order:
        if a.dry_run:
            if rep:
                continue
            # Two tiny iterations at batch 2 on the CPU: checks the job runs; nothing is recorded.
            r = run_worker((c[0], c[1], 2, c[3]), 0, None, None, "cpu", tiny=True, iters=1)
            print(f"  dry run {c}: {r['steps'] + 1} iterations ok", flush=True)
            alone[c] = None
            continue
        if over_budget():
            env["skipped"].append({"config": list(c), "repeat": rep})
            continue
        started = time.time()
        try:
            res, err = run_together([c], a.seconds, a.gpu, a.worker_device, stop_at), None
        except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as e:
            res, err = None, str(e).replace("\n", " ")
        longest = max(longest, time.time() - started)
        runs.append(run_row(c, rep, res, gpu_name, err))
        if err is None and c not in alone:
            alone[c] = res
        print(f"  [{time.time() - t0:5.0f} s] {c} run {rep + 1}/{repeats[c]}: "
              + (json.dumps(res) if err is None else f"FAILED: {err}"), flush=True)
        save(singles(), runs)
    prow = []
    for i, (c1, c2) in enumerate(pairs):
        if a.dry_run:
            res = None
        elif over_budget():
            env["skipped"].append({"pair": [list(c1), list(c2)]})
            continue
        else:
            res = run_together([c1, c2], a.seconds, a.gpu, a.worker_device, stop_at)
        prow.append(pair_row(i, c1, c2, res, alone))
    env["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save(singles(), runs, prow)
    if not a.no_onnx:
        export_onnx(configs, os.path.join(a.out, "onnx"))
    failed = sum(r["error"] is not None for r in runs)
    print(f"measure: wrote {len(alone)} single rows, {len(runs)} runs ({failed} failed), {len(prow)} pair rows"
          + (f"; the budget skipped {len(env['skipped'])} (environment.json)" if env["skipped"] else ""), flush=True)
    if not a.dry_run and failed == len(runs):
        print("measure: no run succeeded", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
