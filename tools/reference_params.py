#!/usr/bin/python3
"""Trainable-parameter counts of every committed graph, counted by torch itself.

usage: /usr/bin/python3 tools/reference_params.py --pollux-src SRC [--out models/reference_params.json]

Builds each torch module exactly as the export scripts do (tools/workloads.py `build` for the
workload graphs of export_workloads.py, tools/flops_ref.py `build` for the torchvision references
and the Transformer of export_reference_models.py, tools/export_pollux.py `modules` for the Pollux
graphs from SRC, adaptdl's benchmark/models at de25dcc) and records
`sum(p.numel() for p in module.parameters() if p.requires_grad)` next to the graph's file name
(relative to models/). BatchNorm running statistics are buffers, not parameters, so they are not
in these counts. The C++ test `CostParams.MatchTorchOnEveryCommittedGraph` (src/cost/
torchvision_test.cc) compares gpucast's total `params` of every listed graph with these counts.
Never edit the output by hand: rerun this script after re-exporting a graph.
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import flops_ref as R  # noqa: E402
import workloads as W  # noqa: E402


def trainable(module):
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--pollux-src", required=True,
                    help="benchmark/models of petuum/adaptdl at de25dcc (tools/export_pollux.py)")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "models", "reference_params.json"))
    a = ap.parse_args()
    graphs = {}
    for w in W.WORKLOADS:
        for g in w["graphs"]:
            graphs[W.graph_file(w, g)] = trainable(W.build(g))
    for name in R.TORCHVISION:
        graphs[f"torchvision/{name}.onnx"] = trainable(R.build(name))
    graphs["transformer6.onnx"] = trainable(R.build("transformer6"))
    import export_pollux as P  # noqa: E402
    dims = {}  # symbolic dims other than the batch, at the size each graph was traced with
    for name, module, args, names, _, axes in P.modules(a.pollux_src):
        graphs[name] = trainable(module)
        for arg, input_name in zip(args, names):
            for axis, dim in axes.get(input_name, {}).items():
                if dim != "batch":
                    dims.setdefault(name, {})[dim] = int(arg.shape[axis])
    out = {"what": "sum(p.numel() for p in model.parameters() if p.requires_grad) of the torch module "
                   "each graph (path relative to models/) was exported from; written by "
                   "tools/reference_params.py",
           "torch": torch.__version__,
           "graphs": dict(sorted(graphs.items())),
           "dims": dict(sorted(dims.items()))}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    for k, v in out["graphs"].items():
        print(f"{k}: {v:,}")


if __name__ == "__main__":
    main()
