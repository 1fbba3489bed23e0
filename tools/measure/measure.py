#!/usr/bin/python3
"""Measure training jobs' GPU utilization the way data/lucid was made, writing rows in its schema.

usage: /usr/bin/python3 tools/measure/measure.py --out DIR [--only MODEL ...] [--batches 32,64,128]
           [--amp 0,1] [--seconds 30] [--pairs K] [--gpu 0] [--dry-run]

Each configuration (workload, batch, amp) trains alone for --seconds in its own process; once its
warm-up iterations are done, nvidia-smi is sampled about 5 times a second until it stops. Then K
sampled pairs of configurations run together on the same GPU (two processes). Writes
  DIR/single_data.csv     model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label
  DIR/colocate_info.csv   ,model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,...,gmem
  DIR/onnx/               each job's graphs (the same weight-free exports as models/)
`label` (Lucid's sharing score, not a measurement) is left empty.

--dry-run (CPU-only machines): validates the plan, runs two training iterations of every
configuration on the CPU with tiny sizes, and writes the CSVs with the GPU and speed columns
EMPTY: no utilization number is measured or invented.
"""
import argparse
import csv
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import workloads as W  # noqa: E402

SINGLE_COLUMNS = ["model", "dataset", "batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem", "label"]
PAIR_JOB = ["model", "dataset", "gpu_num", "batchsize", "amp", "speed"]
COLOCATE_COLUMNS = [""] + [c + "1" for c in PAIR_JOB] + [c + "2" for c in PAIR_JOB] + ["gpu_util", "gmem_util", "gmem"]
SMI_QUERY = "utilization.gpu,utilization.memory,memory.used"
WARMUP = {"BERT": 20}  # warm-up iterations (default 5: RL steps are whole rollouts/episodes)


def plan(only, batches, amps):
    """Configurations (model, dataset, batch, amp) in catalog order."""
    ws = [w for w in W.WORKLOADS if not only or w["model"] in only]
    unknown = set(only or []) - {w["model"] for w in W.WORKLOADS}
    if unknown:
        raise SystemExit(f"measure: unknown workload(s) {sorted(unknown)}; known: "
                         + ", ".join(w["model"] for w in W.WORKLOADS))
    return [(w["model"], w["dataset"], b, a) for w in ws for b in batches for a in amps]


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


def single_row(cfg, res):
    m, d, b, a = cfg
    res = res or {}
    return {"model": m, "dataset": d, "batchsize": b, "amp": a, "speed": res.get("speed"),
            "gpu_util": res.get("gpu_util"), "gmem_util": res.get("gmem_util"), "gmem": res.get("gmem")}


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
    if result:
        with open(result, "w") as f:
            json.dump(r, f)
    return r


def run_together(cfgs, seconds, gpu):
    """Runs cfgs as concurrent worker processes on GPU `gpu`; samples nvidia-smi ~5 Hz from the
    moment all have warmed up until the first finishes. Returns per-job speeds and GPU means."""
    tmp = tempfile.mkdtemp(prefix="gpucast-measure-")
    procs, readies, results = [], [], []
    for i, c in enumerate(cfgs):
        readies.append(os.path.join(tmp, f"ready{i}"))
        results.append(os.path.join(tmp, f"result{i}.json"))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(c),
                                       "--seconds", str(seconds), "--ready", readies[-1], "--result", results[-1]],
                                      env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}))
    while not all(os.path.exists(r) for r in readies):
        if any(p.poll() not in (None, 0) for p in procs):
            break
        time.sleep(0.05)
    samples = []
    while all(p.poll() is None for p in procs):
        t = time.time()
        out = subprocess.run(["nvidia-smi", f"--id={gpu}", f"--query-gpu={SMI_QUERY}",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
        samples += parse_smi(out.stdout)
        time.sleep(max(0.0, 0.2 - (time.time() - t)))
    for p in procs:
        p.wait()
    if any(p.returncode for p in procs):
        raise RuntimeError(f"worker failed for {cfgs}: exit codes {[p.returncode for p in procs]}")
    res = {"samples": len(samples)}
    if samples:
        res.update(gpu_util=sum(s[0] for s in samples) / len(samples),
                   gmem_util=sum(s[1] for s in samples) / len(samples),
                   gmem=sum(s[2] for s in samples) / len(samples), gmem_peak=max(s[2] for s in samples))
    for i, r in enumerate(results):
        with open(r) as f:
            res["speed" + ("" if len(cfgs) == 1 else str(i + 1))] = json.load(f)["speed"]
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--only", nargs="*", help="workload model names (default: all 11)")
    ap.add_argument("--batches", default="32,64,128")
    ap.add_argument("--amp", default="0,1")
    ap.add_argument("--seconds", type=float, default=30.0, help="timed seconds per run")
    ap.add_argument("--pairs", type=int, default=0, help="number of sampled co-located pairs")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--no-onnx", action="store_true", help="skip the ONNX export of each job")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes, no GPU numbers")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--ready", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        run_worker(tuple(json.loads(a.worker)), a.seconds, a.ready, a.result, "cuda", tiny=False)
        return 0
    if not a.out:
        ap.error("--out is required")
    try:
        batches = [int(x) for x in a.batches.split(",")]
        amps = [int(x) for x in a.amp.split(",")]
    except ValueError:
        ap.error("--batches and --amp take comma-separated integers")
    if min(batches) < 1 or set(amps) - {0, 1} or a.seconds <= 0 or a.pairs < 0:
        ap.error("batches must be >= 1, amp 0 or 1, --seconds > 0, --pairs >= 0")
    configs = plan(a.only, batches, amps)
    pairs = pick_pairs(configs, a.pairs)
    os.makedirs(a.out, exist_ok=True)
    print(f"measure: {len(configs)} configurations, {len(pairs)} pairs -> {a.out}"
          + (" (dry run: CPU, tiny sizes, GPU and speed columns left empty)" if a.dry_run else ""), flush=True)
    alone = {}
    for c in configs:
        if a.dry_run:
            # Two tiny iterations at batch 2 on the CPU: checks the job runs; nothing is recorded.
            r = run_worker((c[0], c[1], 2, c[3]), 0, None, None, "cpu", tiny=True, iters=1)
            print(f"  dry run {c}: {r['steps'] + 1} iterations ok", flush=True)
            alone[c] = None
        else:
            alone[c] = run_together([c], a.seconds, a.gpu)
            print(f"  {c}: {json.dumps(alone[c])}", flush=True)
    rows = [single_row(c, alone[c]) for c in configs]
    write_csv(os.path.join(a.out, "single_data.csv"), SINGLE_COLUMNS, rows)
    prow = []
    for i, (c1, c2) in enumerate(pairs):
        res = None if a.dry_run else run_together([c1, c2], a.seconds, a.gpu)
        prow.append(pair_row(i, c1, c2, res, alone))
    write_csv(os.path.join(a.out, "colocate_info.csv"), COLOCATE_COLUMNS, prow)
    if not a.no_onnx:
        export_onnx(configs, os.path.join(a.out, "onnx"))
    print(f"measure: wrote {len(rows)} single rows, {len(prow)} pair rows", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
