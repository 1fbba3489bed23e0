#!/usr/bin/python3
"""A small language model exported the ways users export it, with torch's own parameter count.

usage: /usr/bin/python3 tools/tie_export.py [--out models/ties]

The model: a token embedding whose matrix is also the output layer's (tied weights, as GPT-2 and
BERT's masked-LM head tie them: `head.weight = embed.weight`), a learned position table, and a
fresh nn.TransformerEncoder of two layers (which deep-copies its layer, so the two layers start
with equal values). torch.onnx.export (TorchScript exporter, opset 17, symbolic batch "B") writes:
  OUT/lm-train.onnx         training mode, constant folding on (the default): the exporter folds
                            the head's Transpose of the tied matrix into a second initializer
  OUT/lm-eval.onnx          the default export (eval mode): constant folding as above, and the
                            exporter also merges parameters of equal value (the copied layers,
                            every LayerNorm's ones and zeros) into one, re-creating the others
                            with Identity nodes
  OUT/lm-train-nofold.onnx  training mode, do_constant_folding=False: the Transpose stays a node
OUT/reference.json records torch's count (sum(p.numel() for p in model.parameters() if
p.requires_grad); a tied matrix is one parameter) and the sizes the graphs were traced at. The C++
test src/cost/ties_test.cc checks that gpucast counts each export's parameters as torch does.
Never edit the outputs by hand: rerun this script.
"""
import argparse
import json
import os
import warnings

import torch
import torch.nn as nn

VOCAB, SEQ, D, FFN, LAYERS, HEADS = 256, 16, 32, 64, 2, 4


class TiedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(1, SEQ, D) * 0.02)
        layer = nn.TransformerEncoderLayer(D, HEADS, FFN, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS)
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)
        self.head.weight = self.embed.weight  # tied

    def forward(self, ids):
        return self.head(self.norm(self.encoder(self.embed(ids) + self.pos)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "ties"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    model = TiedLM()
    ids = torch.randint(0, VOCAB, (2, SEQ))
    exports = {
        "lm-train.onnx": dict(training=torch.onnx.TrainingMode.TRAINING),
        "lm-eval.onnx": dict(),
        "lm-train-nofold.onnx": dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False),
    }
    for name, kw in exports.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (ids,), os.path.join(args.out, name), opset_version=17,
                              input_names=["ids"], output_names=["logits"],
                              dynamic_axes={"ids": {0: "B"}, "logits": {0: "B"}}, **kw)
    params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    ref = {
        "what": "torch's parameter count of the model each file of this folder was exported from (a tied "
                "matrix is one parameter); written by tools/tie_export.py (see its docstring)",
        "torch": torch.__version__,
        "params": params,
        "untied_params": params + VOCAB * D,
        "batch": 2,
        "files": sorted(exports),
    }
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=2)
        f.write("\n")
    print(f"wrote {len(exports)} exports and reference.json to {args.out}: torch counts {params} parameters")


if __name__ == "__main__":
    main()
