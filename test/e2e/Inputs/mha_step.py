"""Traces one SGD step of a model built on PyTorch's nn.MultiheadAttention
(the reproduction of issue 28: an embedding, the attention with a residual,
an LM head) in extraction mode, for the partitioning tests.

    TRN_EXTRACT_GRAPHS_ONLY=1 TRN_GRAPH_MANIFEST=DIR/m.jsonl mha_step.py BATCH [--batch-second]
"""
import pathlib
import sys

import torch
import torch.nn.functional as F

import trn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
from models import AttentionLM  # noqa: E402  (test/python/models.py)


def main(argv) -> None:
    batch = int(argv[1])
    model = AttentionLM(batch_first="--batch-second" not in argv)
    step = trn.compile_step(
        model, torch.optim.SGD(model.parameters(), lr=1.0),
        lambda m, x, y: F.cross_entropy(m(x).reshape(-1, 50), y.reshape(-1)))
    step(torch.randint(0, 50, (batch, 8)), torch.randint(0, 50, (batch, 8)))


if __name__ == "__main__":
    main(sys.argv)
