"""Reference models and torch.profiler forward FLOP counts, shared by export_reference_models.py
and torch_flops.py.

FLOPs: torch.profiler(with_flops=True) events of the matrix ops only (convolution and matrix
multiplies), 2 FLOPs per multiply-add. The profiler does not count ConvTranspose, norms, pooling,
activations or softmax, so this is the conv+matmul share of the forward pass.
"""
import torch
import torch.nn as nn
import torchvision

# Ops whose profiler FLOPs are counted (the top-level aten calls, so nothing is counted twice).
MATRIX_OPS = {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::mm", "aten::addmm",
              "aten::bmm", "aten::baddbmm"}

# name -> (factory, per-sample input shape, torchvision's published GFLOPS = G multiply-adds)
TORCHVISION = {
    "resnet18": (lambda: torchvision.models.resnet18(), (3, 224, 224), 1.81),
    "resnet50": (lambda: torchvision.models.resnet50(), (3, 224, 224), 4.09),
    "vgg16": (lambda: torchvision.models.vgg16(), (3, 224, 224), 15.47),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (3, 224, 224), 0.30),
    "alexnet": (lambda: torchvision.models.alexnet(), (3, 224, 224), 0.71),
    "googlenet": (lambda: torchvision.models.googlenet(aux_logits=False, init_weights=False), (3, 224, 224), 1.50),
    "inception_v3": (lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=False),
                     (3, 299, 299), 5.71),
}

TRANSFORMER6 = dict(layers=6, d_model=512, heads=8, ffn=2048)


def transformer6():
    """6-layer nn.TransformerEncoder, d_model 512, 8 heads, FFN 2048, batch_first."""
    c = TRANSFORMER6
    layer = nn.TransformerEncoderLayer(c["d_model"], c["heads"], c["ffn"], batch_first=True)
    return nn.TransformerEncoder(layer, c["layers"], enable_nested_tensor=False)


def build(name, seed=0):
    torch.manual_seed(seed)
    return transformer6() if name == "transformer6" else TORCHVISION[name][0]()


def example_input(name, batch, seq=128):
    if name == "transformer6":
        return torch.randn(batch, seq, TRANSFORMER6["d_model"])
    return torch.randn(batch, *TORCHVISION[name][1])


def profiler_flops(model, x):
    """Forward conv+matmul FLOPs of model(x) by torch.profiler (train mode, grad enabled: the
    Transformer fast path, which the profiler cannot count, is not taken)."""
    model.train()
    with torch.profiler.profile(with_flops=True) as prof:
        model(x)
    return sum(e.flops for e in prof.events() if e.name in MATRIX_OPS and e.flops)
