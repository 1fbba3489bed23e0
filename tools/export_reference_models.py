#!/usr/bin/python3
"""Weight-free reference models for the C++ cost tests, with independent FLOP references.

usage: /usr/bin/python3 tools/export_reference_models.py [--out models]

Writes models/torchvision/{resnet18,...,inception_v3}.onnx and models/transformer6.onnx
(training mode, opset 13, export_params=False, symbolic "batch" and, for the Transformer, "seq")
and models/torchvision/reference_flops.json: torchvision's published GFLOPS (G multiply-adds per
image) and torch.profiler's forward conv+matmul FLOPs (2 per multiply-add) at batch 1 (the
Transformer: batch 32, seq 128).
"""
import argparse
import json
import os
import sys
import warnings

import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flops_ref as R  # noqa: E402


def export(model, x, path, dyn):
    model.train()
    torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": dyn, "output": dyn}, opset_version=13,
                      export_params=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    print(f"{os.path.relpath(path)}: {os.path.getsize(path)} bytes, {len(m.graph.node)} nodes, checked")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "models"))
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_grad_enabled(True)
    tv_dir = os.path.join(a.out, "torchvision")
    os.makedirs(tv_dir, exist_ok=True)
    ref = {"units": "forward FLOPs, 2 per multiply-add; published_gmacs = torchvision's GFLOPS "
                    "(G multiply-adds per image)",
           "counted_ops": sorted(R.MATRIX_OPS), "torch": torch.__version__, "models": {}}
    for name, (_, shape, gmacs) in R.TORCHVISION.items():
        model = R.build(name)
        flops = R.profiler_flops(model, R.example_input(name, 1))
        ref["models"][name] = {"file": f"torchvision/{name}.onnx", "input": [1, *shape], "batch": 1,
                               "published_gmacs": gmacs, "profiler_flops": flops,
                               "profiler_vs_published": round(flops / 2e9 / gmacs, 4)}
        export(model, R.example_input(name, 2), os.path.join(tv_dir, f"{name}.onnx"), {0: "batch"})
    model = R.build("transformer6")
    flops = R.profiler_flops(model, R.example_input("transformer6", 32, 128))
    ref["models"]["transformer6"] = {"file": "transformer6.onnx", "input": [32, 128, 512], "batch": 32,
                                     "dims": {"seq": 128}, **R.TRANSFORMER6, "profiler_flops": flops}
    export(model, R.example_input("transformer6", 2, 8), os.path.join(a.out, "transformer6.onnx"),
           {0: "batch", 1: "seq"})
    with open(os.path.join(tv_dir, "reference_flops.json"), "w") as f:
        json.dump(ref, f, indent=2)
        f.write("\n")
    for k, v in ref["models"].items():
        print(f"{k}: profiler {v['profiler_flops'] / 1e9:.3f} GFLOPs"
              + (f", published {v['published_gmacs']} GMACs, ratio {v['profiler_vs_published']}"
                 if "published_gmacs" in v else ""))


if __name__ == "__main__":
    main()
