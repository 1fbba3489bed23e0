#!/usr/bin/python3
"""Architectures the workload catalog does not hold, exported as a user would, with torch's own counts.

usage: /usr/bin/python3 tools/unseen_models.py [--out models/unseen] [--only NAME ...] [--opsets 14 17]
       /usr/bin/python3 tools/unseen_models.py --list

Each model below is a small configuration of an architecture people train today (torchvision's own
classes where torchvision has one; a diffusion UNet, a GPT decoder with a runtime `tril` causal mask or nanoGPT's mask buffer,
a full-graph GNN, a DLRM recommender, weighted and max-pooled embedding bags, a mixture-of-experts LM, a masked LM,
AlexNet with local response normalization and a torch.jit.script'ed recurrent loop written here in plain torch): Swin-style shifted windows with padding, ConvNeXt
and EfficientNetV2 with stochastic depth on, MaxViT, a segmentation net that interpolates, a
(2+1)D video net (examples/unet.py, gpt.py, gnn.py, dlrm.py and moe.py are the written ones). Each is exported by tools/gpucast-export (training mode, weight-free, stochastic
depth as the identity, symbolic batch) at every opset of --opsets to OUT/NAME-opsetN.onnx, and
OUT/reference.json records, per model, torch's counts at batch 1:
  params          sum(p.numel() for p in model.parameters() if p.requires_grad)
  profiler_flops  forward conv+matmul FLOPs by torch.profiler (tools/flops_ref.py: 2 per
                  multiply-add; the profiler of torch 1.13 counts conv2d, mm, addmm, bmm, baddbmm)
  hook_flops      forward FLOPs of the Conv1d/Conv3d modules, which that profiler does not count
                  (2 x output elements x in_channels/groups x kernel volume, bias not counted), by
                  forward hooks: the reference for the video net is profiler_flops + hook_flops.
The C++ test src/cost/unseen_models_test.cc loads every graph and checks: nothing unsupported,
params within 1% of torch's, conv+matmul forward FLOPs within -2%/+3% of the reference, and
batch 8 costing 8x batch 1. Never edit the outputs by hand: rerun this script.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


# ---- models written as a user's own code: examples/ ----

sys.path.insert(0, os.path.join(HERE, "..", "examples"))
from dlrm import DLRM  # noqa: E402
import gnn  # noqa: E402
import gpt  # noqa: E402
from moe import MoELM  # noqa: E402
import unet  # noqa: E402

# ---- torchvision architectures, small configurations ----

def swin(**kw):
    from torchvision.models.swin_transformer import SwinTransformer
    # 14x14 patches in windows of 4: every stage pads (Pad from shapes) and every second block shifts.
    return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 1], num_heads=[2, 4], window_size=[4, 4],
                           stochastic_depth_prob=0.2, num_classes=100, **kw)


def convnext(**kw):
    from torchvision.models.convnext import ConvNeXt, CNBlockConfig
    return ConvNeXt([CNBlockConfig(32, 64, 2), CNBlockConfig(64, None, 2)], stochastic_depth_prob=0.2,
                    num_classes=100, **kw)


def efficientnet_v2(**kw):
    from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig
    setting = [FusedMBConvConfig(1, 3, 1, 16, 16, 1), FusedMBConvConfig(4, 3, 2, 16, 32, 2),
               MBConvConfig(4, 3, 2, 32, 48, 2, width_mult=1.0, depth_mult=1.0)]
    return EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.2, num_classes=100, last_channel=256, **kw)


def maxvit(**kw):
    from torchvision.models.maxvit import MaxVit
    return MaxVit(input_size=(64, 64), stem_channels=16, partition_size=4, block_channels=[32],
                  block_layers=[1], head_dim=16, stochastic_depth_prob=0.2, num_classes=100, **kw)


def segmentation(**kw):
    import torchvision
    # LR-ASPP on MobileNetV3-Large: bilinear F.interpolate to the input's size (sizes from Shape).
    return torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                     num_classes=8, **kw)


def video(**kw):
    import torchvision
    return torchvision.models.video.r2plus1d_18(num_classes=50, **kw)


class MultiView(nn.Module):
    """Each sample's embedding repeated once per view along the batch (torch.repeat_interleave on
    the dynamic batch dim, which torch.onnx writes as a Loop over sequences), then a conv stem on
    the views and a linear head: multi-crop and contrastive training pair samples so."""

    def __init__(self, views=3):
        super().__init__()
        self.views = views
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.stem(torch.repeat_interleave(x, self.views, dim=0)))


class AlexNetLRN(nn.Module):
    """AlexNet as its paper has it (Krizhevsky et al. 2012: local response normalization after
    the first two convolutions, n = 5, alpha = 1e-4, beta = 0.75, k = 2; torchvision's AlexNet
    leaves it out), small. torch.onnx writes each nn.LocalResponseNorm with a squeeze of a dim
    whose size it does not know: an If, read as the branch its folded condition takes."""

    def __init__(self, classes=100):
        super().__init__()
        lrn = lambda: nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0)  # noqa: E731
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 5, stride=2, padding=2), nn.ReLU(), lrn(), nn.MaxPool2d(3, 2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), lrn(), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 96, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Linear(96, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


class MaskedLM(nn.Module):
    """A BERT-style masked language model whose loss runs the vocabulary head on the masked
    positions only, selected by a boolean mask of the labels (`h[labels != -100]`: torch.onnx
    writes NonZero and GatherND), as hand-written pretraining loops do. The selection's size
    depends on the data; gpucast reads it as every position (an upper bound)."""

    def __init__(self, vocab=1000, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True), 2)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids, labels):
        h = self.enc(self.emb(ids))
        masked = labels != -100
        return nn.functional.cross_entropy(self.head(h[masked]), labels[masked])


class ScriptedRNN(nn.Module):
    """A recurrent tagger written as a Python loop over time steps (nn.LSTMCell, a per-step
    output head, torch.stack of the list), compiled with torch.jit.script as code with loops is:
    torch.onnx writes the loop as a Loop whose trip count is the sequence length, the state
    carried, the list a sequence. gpucast writes it out once --dim fixes the length."""

    def __init__(self, fin=32, hidden=64, classes=10):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.LSTMCell(fin, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.hidden)
        c = torch.zeros(x.size(0), self.hidden)
        outs = []
        for t in range(x.size(1)):
            h, c = self.cell(x[:, t], (h, c))
            outs.append(self.out(h))
        return torch.stack(outs, 1)


def scripted_rnn():
    return torch.jit.script(ScriptedRNN())


class WeightedBags(nn.Module):
    """A recommender's two sparse features as the other nn.EmbeddingBag forms (torch.onnx writes
    each as a Loop of another body than DLRM's sum): a user's history weighted per id
    (per_sample_weights, e.g. recency or watch time) and a max-pooled bag of tags (mode max),
    then an MLP."""

    def __init__(self, history=1000, tags=2000, dim=16):
        super().__init__()
        self.history = nn.EmbeddingBag(history, dim, mode="sum")
        self.tags = nn.EmbeddingBag(tags, dim, mode="max")
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, history, weights, tags):
        bags = [self.history(history, per_sample_weights=weights), self.tags(tags)]
        return self.mlp(torch.cat(bags, 1))


# name -> factory, --input specs of gpucast-export, --dim values, what it exercises.
MODELS = {
    "swin": (swin, ["input=float32[B,3,56,56]"], {}, "shifted windows, Pad from shapes, roll, stochastic depth"),
    "convnext": (convnext, ["input=float32[B,3,64,64]"], {}, "depthwise 7x7, LayerNorm2d, stochastic depth"),
    "efficientnet_v2": (efficientnet_v2, ["input=float32[B,3,64,64]"], {}, "fused MBConv, SE, SiLU, stochastic depth"),
    "maxvit": (maxvit, ["input=float32[B,3,64,64]"], {}, "block and grid attention, relative position bias"),
    "segmentation": (segmentation, ["input=float32[B,3,96,96]"], {}, "bilinear F.interpolate to the input size"),
    "video": (video, ["input=float32[B,3,4,32,32]"], {}, "(2+1)D convolutions (Conv3d)"),
    "diffusion_unet": (lambda: unet.DiffusionUNet(), ["x=float32[B,3,32,32]", "t=int64[B]"], {},
                       "GroupNorm, SiLU, nearest F.interpolate, attention, timestep embedding"),
    "gpt_tril": (lambda: gpt.GPT(vocab_size=1000, n_positions=128, n_embd=64, n_layer=2, n_head=4),
                 ["input_ids=int64[B,seq]"], {"seq": 64}, "causal mask from torch.tril at run time, tied LM head"),
    "gpt_buffer": (lambda: gpt.GPT(vocab_size=1000, n_positions=128, n_embd=64, n_layer=2, n_head=4, mask="buffer"),
                   ["input_ids=int64[B,seq]"], {"seq": 64},
                   "nanoGPT's causal mask: a float buffer per layer compared with 0 (a graph input, not a parameter)"),
    "gcn": (lambda: gnn.FullGraphGCN(fin=64), ["x=float32[B,64]", "edge_index=int64[2,E]"], {"E": 2048},
            "full-graph GNN: the node count stands where the batch goes"),
    "dlrm": (lambda: DLRM(rows=(1000, 2000, 4000)), ["dense=float32[B,13]", "sparse=int64[B,3,4]"], {},
             "recommender: nn.EmbeddingBag (exported as a Loop over the bags), pairwise dot interaction"),
    "moe": (lambda: MoELM(), ["input_ids=int64[B,seq]"], {"seq": 16},
            "mixture of experts: top-2 of 8 routing (torch.where, index_add), read as balanced"),
    "bags": (WeightedBags, ["history=int64[B,6]", "weights=float32[B,6]", "tags=int64[B,3]"], {},
             "nn.EmbeddingBag with per_sample_weights and with mode max (two more Loop bodies)"),
    "masked_lm": (MaskedLM, ["ids=int64[B,seq]", "labels=int64[B,seq]"], {"seq": 16},
                  "a masked-token loss on h[labels != -100] (NonZero of the data: read as every position)"),
    "alexnet_lrn": (AlexNetLRN, ["input=float32[B,3,64,64]"], {},
                    "nn.LocalResponseNorm (its export squeezes a dim of unknown size: an If)"),
    "scripted_rnn": (scripted_rnn, ["x=float32[B,seq,32]"], {"seq": 12},
                     "torch.jit.script of a Python loop over time steps (a Loop carrying the state and a list)"),
    "multiview": (MultiView, ["x=float32[B,3,16,16]"], {},
                  "torch.repeat_interleave on the batch dim (a Loop over sequences), then a conv stem"),
}


def example_inputs(specs, dims, batch):
    """Inputs at `batch` (B): floats random normal, integers in range (token ids < 1000, edge
    indices < batch)."""
    gen = torch.Generator().manual_seed(0)
    out = []
    for spec in specs:
        dtype, shape = spec.split("=")[1].split("[")
        shape = [batch if d == "B" else dims[d] if d in dims else int(d) for d in shape.rstrip("]").split(",")]
        if dtype.startswith("int"):
            out.append(torch.randint(0, batch if spec.startswith("edge_index") else 1000, shape, generator=gen))
        else:
            out.append(torch.randn(shape, generator=gen))
    return tuple(out)


def hook_flops(model, args):
    """Forward FLOPs of Conv1d/Conv3d modules (2 per multiply-add, no bias), by forward hooks."""
    total = [0]

    def hook(m, inp, out):
        total[0] += 2 * out.numel() * (m.in_channels // m.groups) * math.prod(m.kernel_size)

    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv1d, nn.Conv3d))]
    model(*args)
    for h in hs:
        h.remove()
    return total[0]


def references(name):
    import flops_ref as R
    factory, specs, dims, _ = MODELS[name]
    torch.manual_seed(0)
    model = factory()
    model.train()
    args = example_inputs(specs, dims, 1 if name != "gcn" else 512)
    with torch.profiler.profile(with_flops=True) as prof:
        model(*args)
    profiler = sum(e.flops for e in prof.events() if e.name in R.MATRIX_OPS and e.flops)
    return {"params": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "profiler_flops": profiler, "hook_flops": hook_flops(model, args)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "models", "unseen"))
    ap.add_argument("--only", nargs="*", help="only these models (default: all)")
    ap.add_argument("--opsets", nargs="*", type=int, default=[14, 17])
    ap.add_argument("--gpucast", help="the gpucast binary for gpucast-export's check (default: its own search)")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    a = ap.parse_args()
    if a.list:
        for k, (_, specs, dims, what) in MODELS.items():
            print(f"{k}: {what}; {' '.join(specs)} {dims or ''}")
        return 0
    warnings.filterwarnings("ignore")
    names = a.only or list(MODELS)
    os.makedirs(a.out, exist_ok=True)
    ref_path = os.path.join(a.out, "reference.json")
    ref = {"what": "torch's own counts at batch 1 (gcn: 512 nodes) for the graphs of this folder; written by "
                   "tools/unseen_models.py (see its docstring)", "torch": torch.__version__, "models": {}}
    if os.path.exists(ref_path):
        with open(ref_path) as f:
            ref["models"] = json.load(f)["models"]
    for name in names:
        factory, specs, dims, what = MODELS[name]
        r = references(name)
        r.update({"what": what, "batch": 1 if name != "gcn" else 512, "dims": dims,
                  "batch_dims": ["E"] if name == "gcn" else [], "files": {}})
        for opset in a.opsets:
            cmd = [sys.executable, os.path.join(HERE, "gpucast-export"), f"{name}-opset{opset}={__file__}:{name}",
                   "--out", a.out, "--opset", str(opset), "--batch", "8"]
            for s in specs:
                cmd += ["--input", s]
            for k, v in dims.items():
                cmd += ["--dim", f"{k}={v}"]
            if a.gpucast:
                cmd += ["--gpucast", a.gpucast]
            p = subprocess.run(cmd, capture_output=True, text=True)
            print(p.stdout + p.stderr, end="")
            if p.returncode != 0:
                print(f"{name} at opset {opset}: gpucast-export exited {p.returncode}", file=sys.stderr)
                return 1
            r["files"][str(opset)] = f"{name}-opset{opset}.onnx"
        ref["models"][name] = r
        with open(ref_path, "w") as f:
            json.dump(ref, f, indent=2)
            f.write("\n")
    return 0


# gpucast-export FILE.py:FACTORY calls these by name.
for _name in MODELS:
    globals().setdefault(_name, MODELS[_name][0])

if __name__ == "__main__":
    sys.exit(main())
