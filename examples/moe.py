"""A mixture-of-experts language model as a user's own model (docs/models.md): a token embedding,
pre-norm transformer blocks whose feed-forward is a sparse mixture of experts routed as Mixtral
routes (softmax over the experts, the top k per token, their weights renormalised, each expert
run on the tokens sent to it: torch.where, index_add), a linear head. forward(input_ids) takes
[batch, seq] token ids. Which tokens an expert gets depends on the values, so gpucast reads the
routing as balanced (docs/graph-loading.md, "Mixture-of-experts routing").
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MoEFeedForward(nn.Module):
    def __init__(self, d, experts=8, k=2, hidden=None):
        super().__init__()
        self.k = k
        self.router = nn.Linear(d, experts, bias=False)
        hidden = hidden or 4 * d
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(d, hidden, bias=False), nn.SiLU(), nn.Linear(hidden, d, bias=False))
            for _ in range(experts))

    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, shape[-1])
        weights, chosen = torch.topk(F.softmax(self.router(h), dim=-1), self.k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            token, slot = torch.where(chosen == e)
            out = out.index_add(0, token, expert(h[token]) * weights[token, slot, None])
        return out.reshape(shape)


class Block(nn.Module):
    def __init__(self, d, heads, experts, k):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.moe = MoEFeedForward(d, experts, k)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.moe(self.ln2(x))


class MoELM(nn.Module):
    def __init__(self, vocab=1000, d=64, layers=2, heads=4, experts=8, k=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, experts, k) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def build(**config):
    return MoELM(**config)
