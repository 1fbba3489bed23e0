#!/usr/bin/env python3
"""The live tensors of one training step of Lucid's BERT/SQuAD, measured on the CPU (docs/predictor.md,
"BERT/SQuAD: what was checked").

Lucid's workloads/bert/profile_bert.py trains HF BertForQuestionAnswering (bert-base-uncased, fp32,
seq 384) with transformers' AdamW. Here the same network is written out in the torch ops HF's
modeling_bert runs (random weights: the sizes are what matter), dropout as CUDA runs it
(torch.native_dropout: a bool mask kept for backward; the CPU's F.dropout would keep a float noise
tensor), the optimizer as transformers' AdamW steps (per parameter, weight decay 0). After one step
(gradients and optimizer state exist, as after the warm-up), one more step runs under the profiler
with profile_memory: the running sum of every op's own allocations and frees, in the order the ops
start, is the bytes alive over the step (op granularity). Its peak above the start is what the step
adds to weights, gradients and optimizer state: the kept activations and the transients alive with
them. It is what the caching allocator is asked for, not what it reserves.

Every kept tensor is proportional to batch x seq, so the figure scales with the batch at a fixed seq.
Slow on a CPU (one step at batch 2 took minutes on two shared cores).
Usage: tools/bert_live_memory.py [BATCH] [SEQ]   (default 2 384); prints JSON."""
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

B = int(sys.argv[1]) if len(sys.argv) > 1 else 2
S = int(sys.argv[2]) if len(sys.argv) > 2 else 384
H, NH, I, L, V = 768, 12, 3072, 12, 30522  # bert-base-uncased
MIB = 2.0**20


def drop(x, p=0.1):
    return torch.native_dropout(x, p, True)[0]


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(H, H) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(H, eps=1e-12), nn.LayerNorm(H, eps=1e-12)
        self.i, self.out = nn.Linear(H, I), nn.Linear(I, H)

    def heads(self, x):
        return x.view(x.size(0), x.size(1), NH, H // NH).permute(0, 2, 1, 3)

    def forward(self, h, mask):
        q, k, v = self.heads(self.q(h)), self.heads(self.k(h)), self.heads(self.v(h))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(H // NH) + mask
        probs = drop(F.softmax(scores, dim=-1))
        c = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        a = self.ln1(drop(self.o(c.view(c.size(0), c.size(1), H))) + h)
        return self.ln2(drop(self.out(F.gelu(self.i(a)))) + a)


class BertQA(nn.Module):
    def __init__(self):
        super().__init__()
        self.we, self.pe, self.te = nn.Embedding(V, H), nn.Embedding(512, H), nn.Embedding(2, H)
        self.ln = nn.LayerNorm(H, eps=1e-12)
        self.layers = nn.ModuleList(Layer() for _ in range(L))
        self.qa = nn.Linear(H, 2)

    def forward(self, ids, types, attn, start, end):
        h = drop(self.ln(self.we(ids) + self.te(types) + self.pe(torch.arange(S).unsqueeze(0))))
        mask = (1.0 - attn[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            h = layer(h, mask)
        s, e = self.qa(h).split(1, dim=-1)
        s, e = s.squeeze(-1).contiguous(), e.squeeze(-1).contiguous()
        return (F.cross_entropy(s, start) + F.cross_entropy(e, end)) / 2


def main():
    torch.manual_seed(0)
    model = BertQA()
    params = list(model.parameters())
    state = {}

    def adamw(lr=5e-5, b1=0.9, b2=0.999, eps=1e-8):
        for p in params:
            st = state.setdefault(p, {"m": torch.zeros_like(p), "v": torch.zeros_like(p)})
            st["m"].mul_(b1).add_(p.grad, alpha=1 - b1)
            st["v"].mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            p.data.addcdiv_(st["m"], st["v"].sqrt().add_(eps), value=-lr)

    def step():
        for p in params:
            if p.grad is not None:
                p.grad.zero_()  # optimizer.zero_grad() of torch <= 1.13: kept, zeroed
        batch = (torch.randint(0, V, (B, S)), torch.zeros(B, S, dtype=torch.long), torch.ones(B, S, dtype=torch.long),
                 torch.randint(0, S, (B,)), torch.randint(0, S, (B,)))
        model(*batch).backward()
        adamw()

    step()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    live = peak = 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        live += e.self_cpu_memory_usage
        peak = max(peak, live)
    static = sum(p.numel() * p.element_size() for p in params) * 4  # weights, gradients, two AdamW states
    print(json.dumps({"batch": B, "seq": S, "torch": torch.__version__, "peak_above_start_mib": round(peak / MIB, 1),
                      "end_above_start_mib": round(live / MIB, 1), "weights_grads_adamw_mib": round(static / MIB, 1)}))


if __name__ == "__main__":
    main()
