#!/usr/bin/python3
"""Every F.interpolate mode, as torch.onnx exports it, through gpucast analyze.

usage: /usr/bin/python3 tools/interpolate_modes.py [PATH/TO/gpucast]

For each mode torch offers (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area;
align_corners both ways where it applies), each way of giving the output size (scale_factor=2,
size=2x, scale_factor=1.5) and opsets 14 and 17: a one-op module is exported in training mode
and analyzed at batch 2; the line says whether every node was costed and whether the Resize's
output shape equals torch's. Measured with torch 1.13 (docs/models.md, section 6): every mode
torch exports matches; nearest-exact and area torch cannot export.
"""
import itertools
import json
import os
import subprocess
import sys
import tempfile
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
G = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "gpucast")
cases = [("nearest", 4, {}), ("nearest-exact", 4, {}), ("linear", 3, {"align_corners": False}), ("linear", 3, {"align_corners": True}),
         ("bilinear", 4, {"align_corners": False}), ("bilinear", 4, {"align_corners": True}), ("bicubic", 4, {"align_corners": False}),
         ("trilinear", 5, {"align_corners": False}), ("area", 4, {}), ("nearest", 5, {})]
class M(torch.nn.Module):
    def __init__(s, mode, how, kw):
        super().__init__()
        s.mode, s.how, s.kw = mode, how, kw

    def forward(s, x):
        if s.how == "scale": return F.interpolate(x, scale_factor=2.0, mode=s.mode, **s.kw)
        if s.how == "size": return F.interpolate(x, size=tuple(d * 2 for d in x.shape[2:]), mode=s.mode, **s.kw)
        return F.interpolate(x, scale_factor=1.5, mode=s.mode, **s.kw)
for (mode, rank, kw), how, opset in itertools.product(cases, ["scale", "size", "odd"], [14, 17]):
    shape = [2, 3] + [5] * (rank - 2)
    x = torch.randn(*shape, requires_grad=True)
    path = os.path.join(tempfile.gettempdir(), f"gpucast-interpolate-{os.getpid()}.onnx")
    try:
        torch.onnx.export(M(mode, how, kw), (x,), path, input_names=["x"], dynamic_axes={"x": {0: "batch"}}, opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    except Exception as e:
        print(f"{mode:14s} {str(kw):26s} {how:5s} {opset}: torch cannot export: {str(e).splitlines()[0][:80]}"); continue
    y = M(mode, how, kw)(x)
    r = subprocess.run([G, "analyze", path, "--batch", "2", "--json", "--quiet"], capture_output=True, text=True)
    if r.returncode != 0: print(mode, how, opset, "analyze failed", r.stderr[:200]); continue
    j = json.loads(r.stdout)
    outs = [n for n in j["nodes"] if n["op_type"] in ("Resize", "Upsample", "AveragePool", "GlobalAveragePool")]
    got = outs[-1]["output_shapes"][0] if outs else None
    print(f"{mode:14s} {str(kw):26s} {how:5s} {opset}: complete={j['complete']} {[n['op_type'] for n in outs]} shape {got} torch {list(y.shape)} {'OK' if got == list(y.shape) else 'MISMATCH'}")
os.path.exists(path) and os.unlink(path)
