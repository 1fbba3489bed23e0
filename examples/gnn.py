"""A graph convolutional network over one whole graph, as a user's own model (docs/models.md): no
batch of samples, the node count stands where the batch goes. forward(x, edge_index) takes the
node features [nodes, features] and the edge list [2, edges] (source, destination), as PyTorch
Geometric does.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


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


def build(**config):
    return FullGraphGCN(**config)
