"""Exports one small network twice, in training mode, at ONNX opsets 13 and 17 (LayerNorm as
ReduceMean/Sub/Pow/... before 17, one LayerNormalization op from 17; GELU as an Erf chain in both),
for tests/memory_test.sh: gpucast must predict the same GPU memory for both. Also a small CNN exported
in eval mode (BatchNorm folded into the convolutions), which gpucast must warn about.
Usage: /usr/bin/python3 tests/memory_exports.py OUT_DIR   (writes block13.onnx, block17.onnx, cnn_eval.onnx)"""
import sys
import warnings

import torch
from torch import nn


class Block(nn.Module):
    """A pre-norm Transformer block (GPT-style): attention with softmax and dropout, GELU MLP."""

    def __init__(self, d=256, heads=4, ff=1024):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(ff, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = self.drop(torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1))
        x = x + self.drop(self.proj((att @ v).transpose(1, 2).reshape(b, s, d)))
        return x + self.drop(self.fc2(self.act(self.fc1(self.ln2(x)))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.ln = nn.LayerNorm(256)
        self.head = nn.Linear(256, 1000)

    def forward(self, x):
        return self.head(self.ln(self.blocks(x)))


def cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def main():
    out = sys.argv[1]
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    net = Net().train()
    x = torch.randn(2, 128, 256)
    for opset in (13, 17):
        torch.onnx.export(net, (x,), f"{out}/block{opset}.onnx", input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    torch.onnx.export(cnn().eval(), (torch.randn(2, 3, 32, 32),), f"{out}/cnn_eval.onnx", input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=13)


if __name__ == "__main__":
    main()
