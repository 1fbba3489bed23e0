#!/usr/bin/env python3
"""Does AdaptDL's per-step gradient work explain the per-step time the model misses on Pollux' one-GPU T4 runs?

Issue 36 (step time): measured as a line in the per-GPU batch (tools/pollux_step_lines.py), each Pollux
job's one-GPU step has a per-step intercept far above the model's. Pollux' runs went through AdaptDL
(petuum/adaptdl at de25dcc, the commit pollux-t4 comes from), which adds work per step that grows with
the parameters. This script counts that work from the code (the table OPS below, with the lines it comes
from), turns it into time with constants gpucast already has, and prints, per job, the measured
intercept, the model's, and the model's plus each costing of the extra work.

Usage: pollux_adaptdl_overhead.py GPUCAST [EVALUATE.json PREDICTOR.json]
  GPUCAST        the gpucast binary (for `analyze --json` of each job's graph and `gpus --json`)
  EVALUATE.json  `gpucast evaluate --power-limited-clock --data LUCID --data MIG --steps POLLUX
                 --algo physics --json` (the one-GPU runs, measured and predicted)
  PREDICTOR.json `gpucast train --algo physics --data LUCID --data MIG -o PREDICTOR.json` (the fitted
                 physics constants eff_memory, gpu_s_per_kernel, host_s_per_kernel; train has no
                 power-limited clock, which changes only compute times)
  Without the two files the script runs both commands itself (about a minute), with LUCID, MIG and
  POLLUX under $GPUCAST_DATA (lucid/single_data.csv, migprofiler-a100/bert_train.csv, pollux-t4).
Needs /usr/bin/python3 with the onnx package (parameter tensors of the committed graphs).

Where the work is (adaptdl/adaptdl/torch at de25dcc; the benchmark scripts under benchmark/models/):
- What is timed: AdaptiveDataLoader.__iter__ wraps each yielded batch in `profile()` (data.py 321-341):
  time.time() from before the batch is handed to the training loop until the loop asks for the next one
  (_metrics.py 58-75), so the loop body (forward, backward, optimizer, logging) is inside, the next
  batch's loading is not. Under TRACE_THROUGHPUT each batch size runs 21 steps (idx 0-20), the first 5
  not recorded (data.py 533-566); adascale.py 339-341 sets the learning rate to 0 but optimizer.step() still runs.
- One replica, no accumulation: AdaScale's count = replicas x accumulation steps = 1, so every step takes
  the difference-estimator branch (adascale.py 292-304): the squared norms of the previous and current
  gradients and of their average, then a copy of this step's gradients for the next.
- Per parameter tensor, in the backward pass: AdaScale's hook (adascale.py 215-237) computes
  (grad / (pinv * loss_scale)).pow(2).sum(dtype=float64) and adds it into _local_sqr[idx]; for Adam(W)
  after 5 steps pinv is exp_avg_sq.clone().sqrt() / c + eps (223-231). AdaptiveDataParallel's hook
  (parallel.py 82-91) records a CUDA event per parameter.
- After it (adascale.py 257-304): grad.div_(accum) and grad.float() / loss_scale (262-270); Adam's
  preconditioner again (get_pinvs, 372-390); a sum per gradient, each compared with itself, inf and -inf
  in Python, three host syncs per tensor (276-279); _normsqr_groups three times (45-57: pow, float64 sum,
  the Python sum of the per-tensor results, .item()), _average_groups (31-42: add, divide), a clone.
- step() then _reset_accumulation(): optimizer.zero_grad() every step (adascale.py 135-141, 349).
- Adam's step count restarts at every new batch size (_reset_adam_state, adascale.py 143-153 from
  328-331), so of the 16 recorded steps 15 use the preconditioner (step > 5).
- BERT (run_squad.py 149-150) clips the gradient norm every step: a norm per tensor, then a multiply.
tools/adascale_op_count.py runs AdaScale's code on the CPU and counts the same operators and passes.
Not counted (not per parameter, or not AdaptDL's): the optimizers' own steps (in the model already, as
kOptimizerBytesPerParam), apex AMP's unscale (fused multi-tensor kernels), TensorBoard scalars and prints.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pollux_step_lines import line  # noqa: E402

# Job facts from the benchmark scripts (StepJobs() in src/predict/step_eval.cc names the graphs).
JOBS = [
    # job name in the evaluate JSON, graph, analyze dims, optimizer, clips the gradient norm
    ("BERT-base/SQuAD", "bert.onnx", ["seq=384"], "adam", True),        # run_squad.py 94: AdamW
    ("YOLOv3/VOC", "pollux_yolov3.onnx", ["img=448"], "sgd", False),    # yolov3/train.py 52: SGD
    ("ResNet-50/ImageNet", "resnet50.onnx", [], "sgd", False),          # imagenet/main.py 72: SGD
    ("ResNet-18/CIFAR-10", "pollux_resnet18_cifar.onnx", [], "sgd", False),  # cifar10/main.py 77: SGD
    ("NeuMF/MovieLens-1M", "pollux_ncf.onnx", [], "adam", False),       # ncf/main.py 109: Adam (NeuMF-end)
]

# Per parameter tensor of n fp32 elements: (passes, ops). A pass is 4n bytes read or written; an op is
# one host-issued CUDA call (a kernel, an event record, or a device-to-host copy that syncs).
OPS = {
    "sgd": [
        ("hook: grad / s, pow, float64 sum; _local_sqr[idx] += (add, copy)", 2 + 2 + 1, 5),
        ("AdaptiveDataParallel hook: CUDA event record", 0, 1),
        ("grad.div_(accum), grad.float() / loss_scale, sum", 2 + 2 + 1, 3),
        ("three comparisons, each synced to the host", 0, 6),
        ("_normsqr_groups x3: pow, float64 sum, Python sum", 3 * (2 + 1), 3 * 3),
        ("_average_groups: add, / 2", 3 + 2, 2),
        ("clone for the next step", 2, 1),
        ("optimizer.zero_grad", 1, 1),
    ],
    "adam_extra": [
        ("hook: exp_avg_sq clone, sqrt, / c, + eps, * loss_scale; grad / pinv reads 2", 2 * 5 + 1, 5),
        ("get_pinvs: clone, sqrt, / c, + eps", 2 * 4, 4),
        ("_normsqr_groups x3: g / pinv", 3 * 3, 3),
    ],
    "clip": [("clip_grad_norm_: norm, mul_", 1 + 2, 2)],
}


def per_tensor(opt, clip):
    rows = OPS["sgd"] + (OPS["adam_extra"] if opt == "adam" else []) + (OPS["clip"] if clip else [])
    return sum(r[1] for r in rows), sum(r[2] for r in rows)


def param_tensors(path):
    """Trainable float parameter tensors of an ONNX graph (weights as initializers or graph inputs),
    BatchNormalization's running statistics left out: {name: elements}."""
    import onnx
    g = onnx.load(path, load_external_data=False).graph
    inits = {i.name: list(i.dims) for i in g.initializer if i.data_type == 1}
    inputs = {}
    for i in g.input:
        t = i.type.tensor_type
        if t.elem_type == 1 and all(d.HasField("dim_value") for d in t.shape.dim):
            inputs[i.name] = [d.dim_value for d in t.shape.dim]
    out = {}
    for n in g.node:
        for k, x in enumerate(n.input):
            if n.op_type == "BatchNormalization" and k >= 3:
                continue
            dims = inits.get(x, inputs.get(x))
            if dims is not None and n.op_type != "Shape":
                out[x] = math.prod(dims)
    return out


def analyze_params(gpucast, model, dims):
    cmd = [gpucast, "analyze", "--json", "-q", "-b", "1", model] + sum([["--dim", d] for d in dims], [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["totals"]["params"]


def main():
    if len(sys.argv) not in (2, 4):
        sys.exit(__doc__)
    gpucast = sys.argv[1]
    if len(sys.argv) == 4:
        ev_path, pred_path = sys.argv[2:]
    else:
        data = os.environ.get("GPUCAST_DATA")
        if not data:
            sys.exit("GPUCAST_DATA is not set")
        tmpdir = tempfile.TemporaryDirectory()  # removed when the script ends
        tmp = tmpdir.name
        ev_path, pred_path = os.path.join(tmp, "steps.json"), os.path.join(tmp, "physics.json")
        train = ["--data", os.path.join(data, "lucid/single_data.csv"),
                 "--data", os.path.join(data, "migprofiler-a100/bert_train.csv"), "--algo", "physics"]
        with open(ev_path, "w") as f:
            subprocess.run([gpucast, "evaluate", "--power-limited-clock"] + train +
                           ["--steps", os.path.join(data, "pollux-t4"), "--json", "--quiet"], check=True, stdout=f)
        subprocess.run([gpucast, "train"] + train + ["-o", pred_path], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    gpus = json.loads(subprocess.run([gpucast, "gpus", "--json"], check=True, capture_output=True, text=True).stdout)
    t4 = next(g for g in gpus if g["name"] == "T4")
    bw = t4["memory_gbps"] * 1e9
    theta = json.load(open(pred_path))["regressor"]["theta"]
    header = open(os.path.join(root, "src/features/features.h")).read()
    k_host = float(re.search(r"kHostSecondsPerKernel = ([0-9.e-]+);", header).group(1))

    runs = {}
    for e in json.load(open(ev_path))["steps"]:
        for r in e.get("runs", []):
            if r.get("source") == "pollux-t4" and r["gpus"] == 1:
                runs.setdefault(r["job"], []).append(r)

    print("Constants: T4 %.0f GB/s (gpucast gpus); fitted physics eff_memory %.3f, gpu_s_per_kernel %.1f us, "
          "host_s_per_kernel %.1f us; cost layer kHostSecondsPerKernel %.1f us" % (
              bw / 1e9, theta["eff_memory"], theta["gpu_s_per_kernel"] * 1e6, theta["host_s_per_kernel"] * 1e6,
              k_host * 1e6))
    print()
    print("Per parameter tensor (passes of 4n bytes, host-issued ops):")
    for opt, clip in (("sgd", False), ("adam", False), ("adam", True)):
        print("  %-4s%s: %d passes, %d ops" % (opt, " + clip" if clip else "", *per_tensor(opt, clip)))
    print()
    print("Added per-step time (ms): mem = passes x 4 x params / (bandwidth x eff_memory); "
          "A = max(mem + ops x gpu_s_per_kernel, ops x host_s_per_kernel) (as the physics model would add it); "
          "B = mem + ops x kHostSecondsPerKernel (in series: three syncs per tensor)")
    print()
    print("| job | params (M) | tensors | passes | ops/step | mem | A | B | intercept measured | predicted "
          "| predicted + A | predicted + B |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    within = {"mem": 0, "A": 0, "B": 0}
    fp64_jobs = []
    added = {}
    for name, graph, dims, opt, clip in JOBS:
        path = os.path.join(root, "models", graph)
        tensors = param_tensors(path)
        params = analyze_params(gpucast, path, dims)
        if sum(tensors.values()) != params:
            sys.exit("%s: parameter tensors sum to %d, analyze says %d" % (graph, sum(tensors.values()), params))
        passes, ops_per = per_tensor(opt, clip)
        fp64_jobs.append((name.split("/")[0], params))
        ops = ops_per * len(tensors)
        mem = passes * 4 * params / (bw * theta["eff_memory"])
        a = max(mem + ops * theta["gpu_s_per_kernel"], ops * theta["host_s_per_kernel"])
        b = mem + ops * k_host
        added[name] = (a, b)
        v = runs[name]
        _, im = line([r["batch"] for r in v], [r["step_ms"] for r in v])
        _, ip = line([r["batch"] for r in v], [r["predicted_step_ms"] for r in v])
        for key, add in (("mem", mem), ("A", a), ("B", b)):
            within[key] += abs((ip + add * 1e3) / im - 1) <= 0.3
        print("| %s | %.1f | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f (%.2f) | %.1f (%.2f) |" % (
            name, params / 1e6, len(tensors), passes, ops, mem * 1e3, a * 1e3, b * 1e3, im, ip,
            ip + a * 1e3, (ip + a * 1e3) / im, ip + b * 1e3, (ip + b * 1e3) / im))
    print()
    fp64 = t4["fp32_tflops"] * 1e12 / 32  # Turing runs FP64 at 1/32 of its FP32 rate (Turing whitepaper)
    print("Float64 sums (4 per tensor: the hook and _normsqr_groups x3) at the T4's FP64 rate, 1/32 of "
          "%.1f TFLOP/s, against the memory time of the reads they make (ms): " % t4["fp32_tflops"] + ", ".join(
              "%s %.1f vs %.1f" % (n, 4 * p / fp64 * 1e3, 4 * 4 * p / (bw * theta["eff_memory"]) * 1e3)
              for n, p in fp64_jobs))
    print("Jobs whose intercept is within 30%% of the measured one: predicted + mem %d of 5, + A %d of 5, "
          "+ B %d of 5" % (within["mem"], within["A"], within["B"]))

    # YOLOv3: the image size is drawn per step in the main process (yolov3/train.py 141-143), but the 8
    # loader workers hold copies of the dataset made when each batch size's iterator starts, so a batch
    # size runs at one size: the first (the smallest batch) at TRAIN_IMG_SIZE 448, each later one at a
    # size drawn from 320-608 px. The step is then not monotone in the batch.
    v = sorted(runs["YOLOv3/VOC"], key=lambda r: r["batch"])
    print()
    print("YOLOv3 one-GPU runs (batch: measured / predicted ms): " + ", ".join(
        "%d: %.1f / %.1f" % (r["batch"], r["step_ms"], r["predicted_step_ms"]) for r in v))
    r, (a, b) = v[0], added["YOLOv3/VOC"]
    print("YOLOv3 at batch %d (448 px, the one known size): predicted + A %.1f (%.2f), predicted + B %.1f (%.2f) "
          "of the measured %.1f" % (r["batch"], r["predicted_step_ms"] + a * 1e3, (r["predicted_step_ms"] + a * 1e3)
                                     / r["step_ms"], r["predicted_step_ms"] + b * 1e3,
                                     (r["predicted_step_ms"] + b * 1e3) / r["step_ms"], r["step_ms"]))


if __name__ == "__main__":
    main()
