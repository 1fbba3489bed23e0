#!/usr/bin/python3
"""Architectures the workload catalog does not hold, exported as a user would, with torch's own counts.

usage: /usr/bin/python3 tools/unseen_models.py [--out models/unseen] [--only NAME ...] [--opsets 14 17]
       /usr/bin/python3 tools/unseen_models.py --list

Each model below is a small configuration of an architecture people train today (torchvision's own
classes where torchvision has one; a diffusion UNet, a GPT decoder with a runtime `tril` causal mask
and a full-graph GNN written here in plain torch): Swin-style shifted windows with padding, ConvNeXt
and EfficientNetV2 with stochastic depth on, MaxViT, a segmentation net that interpolates, a
(2+1)D video net. Each is exported by tools/gpucast-export (training mode, weight-free, stochastic
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
import torch.nn.functional as F  # noqa: E402


# ---- models written here (plain torch, as a user's own code) ----

class ResBlock(nn.Module):
    """GroupNorm -> SiLU -> conv, timestep embedding added, dropout, GroupNorm -> SiLU -> conv."""

    def __init__(self, cin, cout, tdim, groups=8, p=0.1):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.drop = nn.Dropout(p)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(t))[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return h + self.skip(x)


class SelfAttention2d(nn.Module):
    """Single-head self-attention over the pixels of a feature map (as DDPM's middle block)."""

    def __init__(self, c, groups=8):
        super().__init__()
        self.norm = nn.GroupNorm(groups, c)
        self.qkv = nn.Conv2d(c, 3 * c, 1)
        self.proj = nn.Conv2d(c, c, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
        att = torch.softmax(q.transpose(1, 2) @ k / math.sqrt(c), dim=-1)  # [b, hw, hw]
        y = (v @ att.transpose(1, 2)).reshape(b, c, h, w)
        return x + self.proj(y)


class DiffusionUNet(nn.Module):
    """A DDPM-style denoiser: sinusoidal timestep embedding, ResBlocks with GroupNorm and SiLU,
    strided-conv downsampling, attention in the middle, F.interpolate(nearest) upsampling and
    skip concatenation."""

    def __init__(self, ch=32, mults=(1, 2), tdim=128):
        super().__init__()
        self.ch = ch
        self.temb = nn.Sequential(nn.Linear(ch, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
        chans = [ch * m for m in mults]
        self.down, self.downsample = nn.ModuleList(), nn.ModuleList()
        c = ch
        for i, co in enumerate(chans):
            self.down.append(ResBlock(c, co, tdim))
            c = co
            self.downsample.append(nn.Conv2d(c, c, 3, stride=2, padding=1) if i < len(chans) - 1 else nn.Identity())
        self.mid1, self.mid_attn, self.mid2 = ResBlock(c, c, tdim), SelfAttention2d(c), ResBlock(c, c, tdim)
        self.up, self.upconv = nn.ModuleList(), nn.ModuleList()
        for i, co in reversed(list(enumerate(chans))):
            self.up.append(ResBlock(c + co, co, tdim))
            c = co
            self.upconv.append(nn.Conv2d(c, c, 3, padding=1) if i > 0 else nn.Identity())
        self.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

    def timestep_embedding(self, t):
        half = self.ch // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
        args = t.float()[:, None] * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, x, t):
        temb = self.temb(self.timestep_embedding(t))
        h = self.conv_in(x)
        skips = []
        for block, down in zip(self.down, self.downsample):
            h = block(h, temb)
            skips.append(h)
            h = down(h)
        h = self.mid2(self.mid_attn(self.mid1(h, temb)), temb)
        for block, upconv in zip(self.up, self.upconv):
            s = skips.pop()
            if h.shape[-1] != s.shape[-1]:
                h = F.interpolate(h, scale_factor=2.0, mode="nearest")
            h = upconv(block(torch.cat([h, s], dim=1), temb))
        return self.out(h)


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, p):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))  # built at run time
        att = self.drop(torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1))
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


class GPTDecoder(nn.Module):
    """A GPT-2-style decoder whose causal mask is torch.tril at run time (ONNX Trilu, opset >= 14),
    with an LM head tied to the token embedding."""

    def __init__(self, vocab=1000, n_pos=128, d=64, layers=2, heads=4, p=0.1):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(n_pos, d)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({"ln1": nn.LayerNorm(d), "attn": CausalSelfAttention(d, heads, p),
                                              "ln2": nn.LayerNorm(d),
                                              "mlp": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                                                   nn.Linear(4 * d, d), nn.Dropout(p))}))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, ids):
        pos = torch.arange(ids.size(1), device=ids.device)
        x = self.wte(ids) + self.wpe(pos)[None]
        for blk in self.blocks:
            x = x + blk["attn"](blk["ln1"](x))
            x = x + blk["mlp"](blk["ln2"](x))
        return self.head(self.ln_f(x))


class FullGraphGCN(nn.Module):
    """A GCN over one whole graph (no batch): x [nodes, features], edge_index [2, edges]; each layer
    gathers the source nodes' features and sums them into the destinations (index_add), as
    PyTorch Geometric's message passing does, then a linear layer."""

    def __init__(self, fin=64, hidden=128, classes=16, layers=3, p=0.5):
        super().__init__()
        dims = [fin] + [hidden] * (layers - 1) + [classes]
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.drop = nn.Dropout(p)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        for i, lin in enumerate(self.lins):
            h = lin(self.drop(x))
            x = torch.zeros_like(h).index_add(0, dst, h[src]) + h  # neighbours' sum plus self loop
            if i < len(self.lins) - 1:
                x = F.relu(x)
        return x


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


# name -> factory, --input specs of gpucast-export, --dim values, opsets to skip, what it exercises.
MODELS = {
    "swin": (swin, ["input=float32[B,3,56,56]"], {}, "shifted windows, Pad from shapes, roll, stochastic depth"),
    "convnext": (convnext, ["input=float32[B,3,64,64]"], {}, "depthwise 7x7, LayerNorm2d, stochastic depth"),
    "efficientnet_v2": (efficientnet_v2, ["input=float32[B,3,64,64]"], {}, "fused MBConv, SE, SiLU, stochastic depth"),
    "maxvit": (maxvit, ["input=float32[B,3,64,64]"], {}, "block and grid attention, relative position bias"),
    "segmentation": (segmentation, ["input=float32[B,3,96,96]"], {}, "bilinear F.interpolate to the input size"),
    "video": (video, ["input=float32[B,3,4,32,32]"], {}, "(2+1)D convolutions (Conv3d)"),
    "diffusion_unet": (lambda: DiffusionUNet(), ["x=float32[B,3,32,32]", "t=int64[B]"], {},
                       "GroupNorm, SiLU, nearest F.interpolate, attention, timestep embedding"),
    "gpt_tril": (lambda: GPTDecoder(), ["ids=int64[B,seq]"], {"seq": 64}, "causal mask from torch.tril at run time"),
    "gcn": (lambda: FullGraphGCN(), ["x=float32[B,64]", "edge_index=int64[2,E]"], {"E": 2048},
            "full-graph GNN: the node count stands where the batch goes"),
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
