"""Small models built on PyTorch's own layers, shared by the gradient tests
(test_gradients.py) and the partitioning tests (test/e2e/Inputs)."""

import torch
import torch.nn as nn


class AttentionLM(nn.Module):
    """An embedding, nn.MultiheadAttention with a residual and an LM head:
    issue 28's reproduction (its fused Q/K/V bias was wrong at dp=2)."""

    def __init__(self, batch_first: bool, vocab: int = 50, hidden: int = 32,
                 heads: int = 4) -> None:
        super().__init__()
        self.batch_first = batch_first
        self.emb = nn.Embedding(vocab, hidden)
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=batch_first)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.emb(x)
        if not self.batch_first:
            h = h.transpose(0, 1)
        a, _ = self.attn(h, h, h, need_weights=False)
        out = self.head(h + a)
        return out if self.batch_first else out.transpose(0, 1)
