#!/usr/bin/python3
"""One network exported twice, plain and with ONNX local functions, with torch's own counts.

usage: /usr/bin/python3 tools/function_export.py [--out models/functions]

torch.onnx.export (TorchScript exporter, opset 17, training mode, no constant folding, symbolic
batch "B") writes OUT/blocks-plain.onnx, and OUT/blocks-functions.onnx with
export_modules_as_functions={Block, Mlp}: every Block call becomes a node of domain "__main__"
calling the model-local function Block, whose body calls the nested function Mlp. The two Blocks
differ in their LeakyReLU slope, so the exporter makes the slope a function attribute
(ref_attr_name in the body) that each call sets. OUT/reference.json records torch's counts at
batch 1:
  params          sum(p.numel() for p in model.parameters() if p.requires_grad)
  profiler_flops  forward matmul FLOPs by torch.profiler (tools/flops_ref.py's MATRIX_OPS,
                  2 per multiply-add)
The C++ test src/graph/onnx_functions_test.cc loads both files and checks that the function export
costs exactly as the plain one, and both as torch counts. Never edit the outputs by hand: rerun
this script.
"""
import argparse
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class Mlp(nn.Module):
    def __init__(self, d, slope):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(d, 2 * d), nn.LeakyReLU(slope), nn.Linear(2 * d, d)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, d, slope):
        super().__init__()
        self.norm, self.mlp = nn.LayerNorm(d), Mlp(d, slope)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Net(nn.Module):
    def __init__(self, din=48, d=32, classes=10):
        super().__init__()
        self.embed = nn.Linear(din, d)
        self.blocks = nn.Sequential(Block(d, 0.1), Block(d, 0.2))
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)))


def export(model, path, functions):
    kw = {"export_modules_as_functions": {Block, Mlp}} if functions else {}
    torch.onnx.export(model, (torch.randn(2, 48),), path, opset_version=17, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "B"}}, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "models", "functions"))
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    import flops_ref as R
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    model = Net().train()
    export(model, os.path.join(a.out, "blocks-plain.onnx"), False)
    export(model, os.path.join(a.out, "blocks-functions.onnx"), True)
    with torch.profiler.profile(with_flops=True) as prof:
        model(torch.randn(1, 48))
    ref = {"what": "torch's own counts at batch 1 for the two exports of this folder; written by "
                   "tools/function_export.py (see its docstring)", "torch": torch.__version__,
           "params": sum(p.numel() for p in model.parameters() if p.requires_grad),
           "profiler_flops": sum(e.flops for e in prof.events() if e.name in R.MATRIX_OPS and e.flops),
           "batch": 1, "files": ["blocks-plain.onnx", "blocks-functions.onnx"]}
    with open(os.path.join(a.out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
