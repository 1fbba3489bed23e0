"""A small GPT-2-style language model in plain torch, laid out as Hugging Face's GPT2LMHeadModel
(token and position embeddings, pre-LayerNorm blocks of causal self-attention and a GELU MLP,
a final LayerNorm, and an LM head tied to the token embedding), as a user's own model
(docs/models.md). The causal mask is made at run time with torch.tril (ONNX Trilu, opset 14
and newer), or with mask="buffer" kept as nanoGPT keeps it: a float buffer of ones below the
diagonal, registered once per attention layer at the full context and compared with 0 (an export
without weights makes the buffer a graph input, as the parameters). build() takes the
configuration as keyword arguments.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, n_embd, n_head, p, n_positions=None, mask="tril"):
        super().__init__()
        self.n_head = n_head
        self.mask = mask
        if mask == "buffer":
            n = n_positions
            self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)  # query, key, value in one projection
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(p)
        self.resid_dropout = nn.Dropout(p)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        if self.mask == "buffer":
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        else:
            causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
            att = att.masked_fill(~causal, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, p, n_positions=None, mask="tril"):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = Attention(n_embd, n_head, p, n_positions, mask)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd),
                                 nn.Dropout(p))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size=8000, n_positions=256, n_embd=256, n_layer=4, n_head=4, dropout=0.1,
                 mask="tril"):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([Block(n_embd, n_head, dropout, n_positions, mask) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as GPT-2's

    def forward(self, input_ids):
        t = input_ids.size(1)
        pos = self.wpe.weight[:t].unsqueeze(0)  # positions 0..t-1
        x = self.drop(self.wte(input_ids) + pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def build(**config):
    return GPT(**config)
