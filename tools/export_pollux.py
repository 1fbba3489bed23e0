#!/usr/bin/python3
"""Export the graphs of the Pollux jobs (../shared/data/pollux-t4) from their own training code.

usage: /usr/bin/python3 tools/export_pollux.py SRC [--out models]

SRC is benchmark/models of petuum/adaptdl at commit de25dcc (the Pollux OSDI'21 artifact), e.g.
  git -C adaptdl archive de25dcc benchmark/models | tar -x -C /tmp/adaptdl
  /usr/bin/python3 tools/export_pollux.py /tmp/adaptdl/benchmark/models
The networks are imported from SRC unchanged (cifar10/models/resnet.py ResNet18, ncf/model.py NCF,
yolov3/model/yolov3.py Yolov3) and exported as tools/export_workloads.py exports the catalog's:
training mode, opset 13, no weights, dynamic "batch" (and "img" for YOLOv3). The sizes each
job trains at are in the code (docs/predictor.md "Step time: Pollux and Zeus"):
- cifar10: --model=ResNet18 (adaptdljob.yaml), 32x32 CIFAR-10, 10 classes.
- ncf: NeuMF-end (config.py), factor_num 32, num_layers 3, dropout 0 (main.py defaults) on ml-1m
  (config.py), whose 6,040 users and 3,706 items are the MovieLens-1M counts.
- yolov3: 20 VOC classes, 3 anchors per scale (config/yolov3_config_voc.py); images 448 px
  (TRAIN_IMG_SIZE; multi-scale training draws 320-608 px per step in the main process, but the loader
  workers keep the size of when each batch size's iterator started, so each batch size ran at one size,
  the first at 448 px (docs/predictor.md, "What is left on the T4"): "img" is a dim).
Not exported: imagenet (torchvision resnet50: models/resnet50.onnx) and bert (bert-base-uncased QA at
max_seq_length 384: models/bert.onnx) are the catalog's graphs; deepspeech2 (its input is a spectrogram
as long as each VoxForge utterance, a property of the data the code does not fix).
"""
import argparse
import os
import sys
import types
import warnings

import numpy
import onnx
import onnx.numpy_helper
import torch


def fold_constant_concats(m):
    """Concat nodes of Constant inputs only (F.interpolate's Resize scales [1, 1] + [2, 2]) become one Constant,
    so that the Resize's output shape is known without evaluating the graph."""
    consts = {n.output[0]: n for n in m.graph.node if n.op_type == "Constant"}
    for n in list(m.graph.node):
        if n.op_type != "Concat" or not all(i in consts for i in n.input):
            continue
        arrays = [onnx.numpy_helper.to_array(consts[i].attribute[0].t) for i in n.input]
        axis = [a.i for a in n.attribute if a.name == "axis"][0]
        value = onnx.numpy_helper.from_array(numpy.concatenate(arrays, axis=axis), name=n.output[0])
        folded = onnx.helper.make_node("Constant", [], [n.output[0]], name=n.name + "_folded", value=value)
        m.graph.node.insert(list(m.graph.node).index(n), folded)
        m.graph.node.remove(n)
    used = {i for n in m.graph.node for i in n.input}
    for n in [n for n in m.graph.node if n.op_type == "Constant" and n.output[0] not in used]:
        m.graph.node.remove(n)


def export(module, args, names, outs, axes, path):
    module.train()
    torch.onnx.export(module, args, path, input_names=names, output_names=outs, dynamic_axes=axes,
                      opset_version=13, export_params=False, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    m = onnx.load(path)
    fold_constant_concats(m)
    onnx.save(m, path)
    onnx.checker.check_model(m)
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    print(f"{path}: {len(m.graph.node)} nodes", file=sys.stderr)


def modules(src):
    """The Pollux networks built from SRC unchanged: (file name, module, example args, input names,
    output names, dynamic axes) each. tools/reference_params.py counts their parameters."""
    src = os.path.abspath(src)
    sys.path.insert(0, os.path.join(src, "cifar10"))
    from models.resnet import ResNet18  # noqa: E402
    yield ("pollux_resnet18_cifar.onnx", ResNet18(), (torch.randn(2, 3, 32, 32),), ["image"], ["logits"],
           {"image": {0: "batch"}, "logits": {0: "batch"}})
    sys.path.pop(0)
    for k in [k for k in sys.modules if k == "models" or k.startswith("models.")]:
        del sys.modules[k]

    sys.path.insert(0, os.path.join(src, "ncf"))
    import model as ncf_model  # noqa: E402
    ncf = ncf_model.NCF(6040, 3706, 32, 3, 0.0, "NeuMF-end")
    yield ("pollux_ncf.onnx", ncf, (torch.randint(0, 6040, (2,)), torch.randint(0, 3706, (2,))), ["user", "item"],
           ["prediction"], {"user": {0: "batch"}, "item": {0: "batch"}, "prediction": {0: "batch"}})
    sys.path.pop(0)
    del sys.modules["model"]

    sys.path.insert(0, os.path.join(src, "yolov3"))
    # yolov3/utils/__init__ imports the data pipeline (OpenCV, adaptdl), which the network does not use.
    for name in ("cv2", "adaptdl", "adaptdl.torch"):
        sys.modules.setdefault(name, types.ModuleType(name))
    from model.yolov3 import Yolov3  # noqa: E402
    yolo = Yolov3(init_weights=False)
    outs = [f"{k}_{s}" for k in ("p", "p_d") for s in ("s", "m", "l")]

    class Flat(torch.nn.Module):  # the training-mode outputs (p, p_d) of three scales as six tensors
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            p, p_d = self.m(x)
            return (*p, *p_d)

    yield ("pollux_yolov3.onnx", Flat(yolo), (torch.randn(2, 3, 448, 448),), ["image"], outs,
           {"image": {0: "batch", 2: "img", 3: "img"}, **{o: {0: "batch"} for o in outs}})
    sys.path.pop(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("src")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "models"))
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    for name, module, args, names, outs, axes in modules(a.src):
        export(module, args, names, outs, axes, os.path.join(a.out, name))


if __name__ == "__main__":
    main()
