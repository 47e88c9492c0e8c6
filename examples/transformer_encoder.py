"""Trains PyTorch's own nn.TransformerEncoder on a synthetic token-tagging task.

An embedding and learned positions, ``nn.TransformerEncoder`` of ``nn.TransformerEncoderLayer(batch_first=True)``
(post-LN, GELU, final LayerNorm), and a per-token classification head. The task: tag every token with the class
of the token before it (the first position with class 0), so the encoder has to attend to its neighbour.

    .venv/bin/python examples/transformer_encoder.py                  # eager PyTorch on the CPU
    .venv/bin/python examples/transformer_encoder.py --device trn     # compiled by trn, run on the simulator
"""

import dataclasses
import sys
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

import common


@dataclasses.dataclass
class EncoderConfig:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    vocab: int = 128
    seq: int = 16
    ffn: Optional[int] = None  # 4 * hidden when not given
    classes: int = 8
    dropout: float = 0.0

    def __post_init__(self) -> None:
        self.ffn = self.ffn or 4 * self.hidden
        if self.hidden % self.heads:
            raise ValueError(f"--heads {self.heads} does not divide --hidden {self.hidden}")


PRESETS = {"small": {"batch": 4}}


class TokenTagger(nn.Module):
    def __init__(self, cfg: EncoderConfig, device=None, dtype=None) -> None:
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden, **kw)
        self.positions = nn.Embedding(cfg.seq, cfg.hidden, **kw)
        layer = nn.TransformerEncoderLayer(cfg.hidden, cfg.heads, dim_feedforward=cfg.ffn, dropout=cfg.dropout,
                                           activation="gelu", batch_first=True, **kw)
        self.encoder = nn.TransformerEncoder(layer, cfg.layers, norm=nn.LayerNorm(cfg.hidden, **kw),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(cfg.hidden, cfg.classes, **kw)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.embed(input_ids) + self.positions(positions)
        return self.head(self.encoder(x))  # [batch, seq, classes]


def loss_fn(model: TokenTagger, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean per-token cross-entropy."""
    logits = model(input_ids).float()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


def main(argv=None) -> int:
    args = common.parse_args(__doc__, EncoderConfig, PRESETS, argv)
    cfg, batch = common.resolve_config(EncoderConfig, PRESETS, args)
    model = common.build_model(TokenTagger, cfg, args)
    token_class = torch.randint(0, cfg.classes, (cfg.vocab,), generator=torch.Generator().manual_seed(args.seed))

    def make_batch(gen: torch.Generator):
        input_ids = torch.randint(0, cfg.vocab, (batch, cfg.seq), generator=gen)
        labels = torch.zeros_like(input_ids)
        labels[:, 1:] = token_class[input_ids[:, :-1]]
        return input_ids, labels

    return common.train(args, model, loss_fn, make_batch)


if __name__ == "__main__":
    sys.exit(main())
