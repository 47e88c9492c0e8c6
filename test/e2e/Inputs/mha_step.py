"""Traces one SGD step of a model built on PyTorch's nn.MultiheadAttention
(the reproduction of issue 28: an embedding, the attention with a residual,
an LM head) in extraction mode, for the partitioning tests.

    TRN_EXTRACT_GRAPHS_ONLY=1 TRN_GRAPH_MANIFEST=DIR/m.jsonl mha_step.py BATCH [--batch-second]
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import trn


class Model(nn.Module):
    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.batch_first = batch_first
        self.emb = nn.Embedding(50, 32)
        self.attn = nn.MultiheadAttention(32, 4, batch_first=batch_first)
        self.head = nn.Linear(32, 50)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.emb(x)
        if not self.batch_first:
            h = h.transpose(0, 1)
        a, _ = self.attn(h, h, h, need_weights=False)
        out = self.head(h + a)
        return out if self.batch_first else out.transpose(0, 1)


def main(argv) -> None:
    batch = int(argv[1])
    model = Model(batch_first="--batch-second" not in argv)
    step = trn.compile_step(
        model, torch.optim.SGD(model.parameters(), lr=1.0),
        lambda m, x, y: F.cross_entropy(m(x).reshape(-1, 50), y.reshape(-1)))
    step(torch.randint(0, 50, (batch, 8)), torch.randint(0, 50, (batch, 8)))


if __name__ == "__main__":
    main(sys.argv)
