#!/usr/bin/python3
"""Export resnet50 and vgg16 WITH embedded random-init weights (~100 MB, ~550 MB) for bench/.

usage: /usr/bin/python3 tools/make_bench_models.py OUT_DIR

Same export settings as the committed weight-free graphs (training mode, opset 13, symbolic
"batch"), but export_params=True. The files are large: never commit them.
"""
import os
import sys
import warnings

import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flops_ref as R  # noqa: E402


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__.strip())
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    warnings.filterwarnings("ignore")
    for name in ("resnet50", "vgg16"):
        path = os.path.join(out, f"{name}.onnx")
        model = R.build(name).train()
        torch.onnx.export(model, (R.example_input(name, 2),), path, input_names=["input"],
                          output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          opset_version=13, export_params=True, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        onnx.checker.check_model(path)  # by path: works for files over 2 GB too
        print(f"{path}: {os.path.getsize(path) / 2**20:.1f} MiB, checked")


if __name__ == "__main__":
    main()
