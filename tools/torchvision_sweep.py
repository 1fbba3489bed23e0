#!/usr/bin/python3
"""Discovery sweep: every torchvision model, exported the way a user exports it, then analyzed.

usage: /usr/bin/python3 tools/torchvision_sweep.py [--only NAME ...] [--out DIR] [--gpucast PATH]
                                                  [--timeout S] [--predict NAME ...] [--predictor FILE]
       /usr/bin/python3 tools/torchvision_sweep.py --list

Every builder of torchvision.models.list_models() in torchvision.models (classification),
.segmentation, .detection, .video and .optical_flow (.quantization left out: quantized models do not
train) is exported by tools/gpucast-export as a user would run it: `torchvision.models:NAME`
(weights=None; weights_backbone=None where the builder would download a backbone), training mode,
weight-free, symbolic batch, --opset 17, --no-check (so that the file is kept when a check would
fail), each in its own process under --timeout seconds. Inputs are as small as the model accepts
(64x64 images; 224 where the model fixes its size: ViT, Swin, MaxViT, S3D, MViT, and for AlexNet and
VGG, whose adaptive pooling exports only where its output divides the feature map; 299 for
Inception v3, whose auxiliary head needs it). Then, at batch 2:
  gpucast analyze FILE --batch 2 --json   complete? uncosted/unsupported nodes, params, FLOPs
  gpucast-export's own check              (check_analyze: every node costed, params equal to torch's
                                          sum(p.numel()), FLOPs that follow the batch), its verdict
  gpucast predict --model FILE --batch 2 --json   for the names of --predict (needs --predictor).
One JSON line per model goes to OUT/results.jsonl as it finishes, and a markdown table of them all to
OUT/results.md at the end. The ONNX files stay in OUT (default: a new directory under /tmp); this is
a discovery tool: never commit its outputs.
"""
import argparse
import importlib.machinery
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, "gpucast-export")
PYTHON = "/usr/bin/python3"

IMG = "x=float32[B,3,{s},{s}]"
# Models whose input size is not 64x64: the smallest each accepts.
SIZE = {"inception_v3": 299, "maxvit_t": 224}
# AlexNet and VGG pool their features to 6x6 / 7x7 (nn.AdaptiveAvgPool2d), which torch 1.13 exports only
# where that divides the feature map: 224 gives 6x6 / 7x7 exactly.
SIZE.update({n: 224 for n in ("alexnet", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19",
                              "vgg19_bn")})
SIZE.update({n: 224 for n in ("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14")})
SIZE.update({n: 224 for n in ("swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b")})
VIDEO = {  # [B, C, T, H, W]
    "r3d_18": "x=float32[B,3,8,64,64]", "mc3_18": "x=float32[B,3,8,64,64]",
    "r2plus1d_18": "x=float32[B,3,8,64,64]",
    # S3D ends in a fixed AvgPool3d((2, 7, 7)); MViT fixes its 16 x 224 x 224 clip.
    "s3d": "x=float32[B,3,16,224,224]", "mvit_v1_b": "x=float32[B,3,16,224,224]",
    "mvit_v2_s": "x=float32[B,3,16,224,224]",
}


def catalog():
    """[(name, module, [--input specs], kwargs)] for every model of torchvision (quantization left out)."""
    import torchvision.models as tvm
    out = []
    for name in tvm.list_models(tvm):
        out.append((name, "torchvision.models", [IMG.format(s=SIZE.get(name, 64))], {}))
    for name in tvm.list_models(tvm.segmentation):
        out.append((name, "torchvision.models.segmentation", [IMG.format(s=64)], {"weights_backbone": None}))
    for name in tvm.list_models(tvm.detection):
        # Training mode: forward(images, targets); a user can only describe the images.
        out.append((name, "torchvision.models.detection", [IMG.format(s=320)], {"weights_backbone": None}))
    for name in tvm.list_models(tvm.video):
        out.append((name, "torchvision.models.video", [VIDEO.get(name, "x=float32[B,3,8,64,64]")], {}))
    for name in tvm.list_models(tvm.optical_flow):
        out.append((name, "torchvision.models.optical_flow",
                    ["image1=float32[B,3,128,128]", "image2=float32[B,3,128,128]"], {}))
    return out


def load_export_module():
    loader = importlib.machinery.SourceFileLoader("gpucast_export", EXPORT)
    spec = importlib.util.spec_from_loader("gpucast_export", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def short(text, n=400):
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "..."


def run_model(name, module, inputs, kwargs, a, gx):
    rec = {"model": name, "module": module, "inputs": inputs, "kwargs": kwargs}
    out_dir = os.path.join(a.out, name)
    os.makedirs(out_dir, exist_ok=True)
    cmd = [PYTHON, EXPORT, f"{module}:{name}", "--batch", "2", "--opset", "17", "--out", out_dir,
           "--no-check", "--kwargs", json.dumps(kwargs)]
    for i in inputs:
        cmd += ["--input", i]
    rec["export_cmd"] = " ".join(cmd[1:])
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
        rec["export_s"] = round(time.time() - t0, 1)
        rec["export_ok"] = r.returncode == 0
        if r.returncode != 0:
            rec["export_error"] = short(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}",
                                        1500)
            rec["export_hint"] = bool(re.search(r"hint:", r.stderr))
            return rec
        m = re.search(r"torch counts ([\d,]+) parameters", r.stdout)
        rec["torch_params"] = int(m.group(1).replace(",", "")) if m else None
        rec["export_notes"] = [short(l.strip()[len("note: "):], 200) for l in r.stdout.splitlines()
                               if l.strip().startswith("note:")]
    except subprocess.TimeoutExpired:
        rec["export_s"] = round(time.time() - t0, 1)
        rec["export_ok"] = False
        rec["export_error"] = f"timeout: export took over {a.timeout} s (skipped)"
        return rec
    path = os.path.join(out_dir, name + ".onnx")
    rec["onnx_bytes"] = os.path.getsize(path)

    t0 = time.time()
    r = subprocess.run([a.gpucast, "analyze", path, "--batch", "2", "--json", "--quiet"],
                       capture_output=True, text=True)
    rec["analyze_s"] = round(time.time() - t0, 2)
    rec["analyze_rc"] = r.returncode
    if r.returncode != 0:
        rec["analyze_ok"] = False
        rec["analyze_error"] = short(r.stderr.strip(), 1500)
        return rec
    rep = json.loads(r.stdout)
    t = rep["totals"]
    rec.update(complete=rep["complete"], uncosted_nodes=rep["uncosted_nodes"],
               first_uncosted=rep["first_uncosted"], unsupported=rep["unsupported"],
               unknown_shapes=len(rep.get("unknown_shapes", [])), warnings=rep.get("warnings", []),
               gpucast_params=t["params"], forward_flops=t["forward_flops"],
               backward_flops=t["backward_flops"], num_nodes=t["num_nodes"])
    rec["params_match"] = rec["torch_params"] == t["params"]
    # gpucast-export's own verdict on the file (what a user running it without --no-check sees).
    try:
        chk = gx.check_analyze(a.gpucast, path, rec["torch_params"], 2, {})
        rec["check_ok"] = True
        rec["check_notes"] = chk.get("notes", [])
    except gx.CheckError as e:
        rec["check_ok"] = False
        rec["check_error"] = short(str(e).replace(path, name + ".onnx"), 1500)
    rec["analyze_ok"] = rep["complete"] and rec["check_ok"]

    if name in (a.predict or []):
        if not a.predictor:
            rec["predict_error"] = "no --predictor given"
        else:
            t0 = time.time()
            r = subprocess.run([a.gpucast, "predict", "--predictor", a.predictor, "--model", path, "--batch", "2",
                                "--json", "--quiet"], capture_output=True, text=True)
            rec["predict_s"] = round(time.time() - t0, 2)
            if r.returncode != 0:
                rec["predict_error"] = short(r.stderr.strip(), 1000)
            else:
                p = json.loads(r.stdout)
                rec["predict"] = {k: p.get(k) for k in ("gpu", "gpu_util", "interval", "step_ms", "gpu_mem_mib",
                                                        "unsure")}
    return rec


def reason(rec):
    if not rec.get("export_ok"):
        return rec.get("export_error", "")
    if rec.get("analyze_rc", 0) != 0:
        return "gpucast analyze: " + rec.get("analyze_error", "")
    if not rec.get("complete"):
        return f"{rec['uncosted_nodes']} uncosted; first {rec['first_uncosted']}"
    if not rec.get("check_ok"):
        return rec.get("check_error", "")
    return ""


def table(recs):
    lines = ["| model | input | export | analyze | params torch / gpucast | fwd GFLOPs @2 | nodes | export s | reason |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        ok = lambda v: "ok" if v else ("-" if v is None else "FAIL")  # noqa: E731
        params = (f"{r['torch_params']:,} / {r['gpucast_params']:,}" if "gpucast_params" in r else "")
        gfl = f"{r['forward_flops'] / 1e9:.3g}" if "forward_flops" in r else ""
        lines.append(f"| {r['model']} | {' '.join(i.split('=', 1)[1] for i in r['inputs'])} | {ok(r['export_ok'])} | "
                     f"{ok(r.get('analyze_ok'))} | {params} | {gfl} | {r.get('num_nodes', '')} | "
                     f"{r.get('export_s', '')} | {short(reason(r), 160).replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1], epilog="\n".join(__doc__.splitlines()[2:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="list the models and their inputs, export nothing")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="these models only")
    ap.add_argument("--skip", nargs="+", metavar="NAME", default=[], help="leave these out")
    ap.add_argument("--out", help="directory for the files and results (default: a new one under /tmp)")
    ap.add_argument("--gpucast", default=os.environ.get("GPUCAST") or os.path.join(HERE, "..", "build", "gpucast"))
    ap.add_argument("--timeout", type=float, default=180, help="seconds one export may take (default 180)")
    ap.add_argument("--predict", nargs="+", metavar="NAME", help="also run gpucast predict on these")
    ap.add_argument("--predictor", help="predictor file for --predict (gpucast train --out FILE)")
    a = ap.parse_args(argv)
    models = catalog()
    if a.only:
        unknown = set(a.only) - {m[0] for m in models}
        if unknown:
            ap.error(f"unknown model(s): {', '.join(sorted(unknown))}")
        models = [m for m in models if m[0] in a.only]
    models = [m for m in models if m[0] not in a.skip]
    if a.list:
        for name, module, inputs, kwargs in models:
            print(f"{name:40s} {module:34s} {' '.join(inputs)} {json.dumps(kwargs) if kwargs else ''}")
        return 0
    if not os.access(a.gpucast, os.X_OK):
        ap.error(f"gpucast binary not found at {a.gpucast}: give --gpucast")
    a.out = a.out or tempfile.mkdtemp(prefix="tv-sweep-")
    os.makedirs(a.out, exist_ok=True)
    gx = load_export_module()
    recs = []
    with open(os.path.join(a.out, "results.jsonl"), "a") as log:
        for i, (name, module, inputs, kwargs) in enumerate(models):
            t0 = time.time()
            rec = run_model(name, module, inputs, kwargs, a, gx)
            rec["wall_s"] = round(time.time() - t0, 1)
            recs.append(rec)
            log.write(json.dumps(rec) + "\n")
            log.flush()
            status = "ok" if rec.get("analyze_ok") else ("EXPORT-FAIL" if not rec["export_ok"] else "ANALYZE-FAIL")
            print(f"[{i + 1}/{len(models)}] {name}: {status} ({rec['wall_s']} s) {short(reason(rec), 200)}",
                  flush=True)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(table(recs))
    print(f"results: {a.out}/results.jsonl, {a.out}/results.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
