#!/usr/bin/python3
"""Export the measured workloads' graphs to weight-free ONNX plus models/catalog.json.

usage: /usr/bin/python3 tools/export_workloads.py [--out models] [--only MODEL ...]

Each network of tools/workloads.py is exported in training mode (BatchNorm and Dropout kept),
opset 13, without weights (parameters become graph inputs with static shapes), with the dynamic
dims named as in the workload table ("batch" on every data input and output, "seq" for token
sequences). Every file is checked with onnx.checker and onnx.shape_inference afterwards.
"""
import argparse
import json
import os
import sys
import warnings

import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads as W  # noqa: E402

CATALOG_VERSION = 1


def dynamic_axes(specs):
    """{tensor name: {axis: symbolic name}} for every string dim of the given (name, dims, ...) specs."""
    axes = {}
    for spec in specs:
        named = {i: d for i, d in enumerate(spec[1]) if isinstance(d, str)}
        if named:
            axes[spec[0]] = named
    return axes


def export_graph(module, g, dims, path, export_params=False):
    """Training-mode, opset-13 export of one graph; export_params=False leaves the weights out."""
    module.train()
    args = W.example_inputs(g, 2, dims)
    torch.onnx.export(
        module, args, path,
        input_names=[i[0] for i in g["inputs"]], output_names=[o[0] for o in g["outputs"]],
        dynamic_axes={**dynamic_axes(g["inputs"]), **dynamic_axes(g["outputs"])},
        opset_version=13, export_params=export_params,
        training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


def check(path):
    """Runs onnx.checker and strict shape inference; returns (nodes, inputs) counts."""
    m = onnx.load(path)
    onnx.checker.check_model(m)
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    return len(m.graph.node), len(m.graph.input)


def catalog_entry(w):
    graphs = []
    for g in w["graphs"]:
        e = {"file": W.graph_file(w, g), "repeat": g["repeat"]}
        if g["forward_only"]:
            e["forward_only"] = g["forward_only"]
        graphs.append(e)
    e = {"model": w["model"], "dataset": w["dataset"], "graphs": graphs, "dims": w["dims"],
         "attrs": w["attrs"]}
    if (w["model"], w["dataset"]) in W.SPEED_NOT_SAMPLES:
        e["speed_is_samples_per_s"] = False
    e["notes"] = w["notes"]
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "models"))
    ap.add_argument("--only", nargs="*", help="model names to export (default: all)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    warnings.filterwarnings("ignore")  # torch.onnx's training-mode notices
    torch.set_grad_enabled(True)  # Transformers must be exported with grad enabled
    for w in W.WORKLOADS:
        if a.only and w["model"] not in a.only:
            continue
        for g in w["graphs"]:
            path = os.path.join(a.out, W.graph_file(w, g))
            export_graph(W.build(g), g, w["dims"] or {}, path)
            nodes, inputs = check(path)
            print(f"{os.path.relpath(path)}: {os.path.getsize(path)} bytes, {nodes} nodes, {inputs} inputs, checked")
    catalog = {"version": CATALOG_VERSION, "gpu": "RTX3090",
               "workloads": [catalog_entry(w) for w in W.WORKLOADS]}
    with open(os.path.join(a.out, "catalog.json"), "w") as f:
        json.dump(catalog, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
