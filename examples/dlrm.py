"""A deep learning recommendation model (DLRM, Naumov et al. 2019) as a user's own model (docs/models.md):
dense features through a bottom MLP, one nn.EmbeddingBag (sum of a bag of lookups) per sparse feature,
the pairwise dot products of those vectors, and a top MLP. forward(dense, sparse) takes dense [batch,
dense_features] and sparse [batch, tables, lookups] (each sample's bag of row ids per table, a fixed
count per bag). torch.onnx exports each EmbeddingBag as a Loop over the bags; gpucast reads that Loop
as the embedding bag it is (docs/cost-rules.md). sparse=True gives the tables sparse gradients, as
the DLRM reference trains them (nn.EmbeddingBag(..., sparse=True) with SGD): gpucast-export names
them in the file and a step's gradient is the rows it looks up.
"""
import torch
import torch.nn as nn


class DLRM(nn.Module):
    def __init__(self, dense=13, rows=(1000, 800, 600), dim=16, bottom=(64,), top=(64,), mode="sum", sparse=False):
        super().__init__()
        sizes = [dense, *bottom, dim]
        self.bottom = nn.Sequential(*[m for a, b in zip(sizes, sizes[1:]) for m in (nn.Linear(a, b), nn.ReLU())])
        self.tables = nn.ModuleList(nn.EmbeddingBag(n, dim, mode=mode, sparse=sparse) for n in rows)
        f = len(rows) + 1
        pairs = f * (f - 1) // 2
        li, lj = torch.tril_indices(f, f, offset=-1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)
        sizes = [dim + pairs, *top]
        layers = [m for a, b in zip(sizes, sizes[1:]) for m in (nn.Linear(a, b), nn.ReLU())]
        self.top = nn.Sequential(*layers, nn.Linear(sizes[-1], 1))

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        vectors = [x] + [t(sparse[:, k]) for k, t in enumerate(self.tables)]
        z = torch.stack(vectors, 1)                     # [batch, features, dim]
        dots = torch.bmm(z, z.transpose(1, 2))          # every pair's dot product
        return self.top(torch.cat([x, dots[:, self.li, self.lj]], 1))


def build(**config):
    return DLRM(**config)
